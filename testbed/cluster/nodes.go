package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// GPUResource is the resource name of the NVIDIA device plugin.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Labels of GPU feature discovery and of the testbed's nodes.
const (
	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelGPUCount   = "nvidia.com/gpu.count"
	LabelGPUMemory  = "nvidia.com/gpu.memory" // MiB per GPU
	// LabelPool names the pool a testbed node was created for.
	LabelPool = "pickyman.dev/pool"
	// LabelType marks every node the testbed created, so that it can find and delete them.
	LabelType = "type"
	// TypeKwok is the value of LabelType on testbed nodes.
	TypeKwok = "kwok"
)

// GPUModel is what GPU feature discovery reports for one GPU model.
type GPUModel struct {
	Product   string // value of nvidia.com/gpu.product
	MemoryMiB int64  // value of nvidia.com/gpu.memory
}

// gpuModels maps the short names accepted on the command line to the labels GPU feature
// discovery puts on nodes with those GPUs (memory from the vendors' data sheets).
var gpuModels = map[string]GPUModel{
	"A100":      {Product: "NVIDIA-A100-SXM4-80GB", MemoryMiB: 81920},
	"A100-40GB": {Product: "NVIDIA-A100-SXM4-40GB", MemoryMiB: 40960},
	"H100":      {Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559},
	"V100":      {Product: "Tesla-V100-SXM2-32GB", MemoryMiB: 32768},
	"P100":      {Product: "Tesla-P100-PCIE-16GB", MemoryMiB: 16384},
	"T4":        {Product: "Tesla-T4", MemoryMiB: 15360},
	"A10":       {Product: "NVIDIA-A10", MemoryMiB: 23028},
	"L4":        {Product: "NVIDIA-L4", MemoryMiB: 23034},
	"A40":       {Product: "NVIDIA-A40", MemoryMiB: 46068},
}

// KnownGPUModels lists the short model names that LookupGPUModel knows, sorted.
func KnownGPUModels() []string {
	names := make([]string, 0, len(gpuModels))
	for n := range gpuModels {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupGPUModel returns the labels for a short model name ("A100") or, for an unknown name,
// the name itself as the product with unknown (zero) memory.
func LookupGPUModel(name string) GPUModel {
	if m, ok := gpuModels[strings.ToUpper(name)]; ok {
		return m
	}
	return GPUModel{Product: name}
}

// CheckGPUModel fails on a model name that LookupGPUModel does not know, listing the ones it
// knows: a node of an unknown model would have no GPU memory label.
func CheckGPUModel(name string) error {
	if _, ok := gpuModels[strings.ToUpper(name)]; ok {
		return nil
	}
	return fmt.Errorf("unknown GPU model %q (known: %s; another GPU needs its memory: NODESxGPUS:PRODUCT:MEMORY_MIB)",
		name, strings.Join(KnownGPUModels(), ", "))
}

// Pool is a set of identical fake GPU nodes.
type Pool struct {
	Name        string // node names are <Name>-<index>; defaults to kwok-<model>
	Nodes       int
	GPUsPerNode int
	Model       string // short name ("A100") or a full product name
	MemoryMiB   int64  // per GPU; 0 takes the model's
	Labels      map[string]string
	Taints      []corev1.Taint
}

// ParsePool parses "NODESxGPUS:MODEL[:MEMORY_MIB]", for example "4x8:A100" or
// "2x4:V100:16384". Without MEMORY_MIB, MODEL must be one of KnownGPUModels; with it, MODEL
// may be any product name.
func ParsePool(s string) (Pool, error) {
	size, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return Pool{}, fmt.Errorf("pool %q: want NODESxGPUS:MODEL[:MEMORY_MIB], e.g. 4x8:A100", s)
	}
	n, g, ok := strings.Cut(strings.ToLower(size), "x")
	if !ok {
		return Pool{}, fmt.Errorf("pool %q: size %q is not NODESxGPUS", s, size)
	}
	nodes, err := strconv.Atoi(n)
	if err != nil || nodes < 0 {
		return Pool{}, fmt.Errorf("pool %q: bad node count %q", s, n)
	}
	gpus, err := strconv.Atoi(g)
	if err != nil || gpus < 0 {
		return Pool{}, fmt.Errorf("pool %q: bad GPUs per node %q", s, g)
	}
	p := Pool{Nodes: nodes, GPUsPerNode: gpus, Model: rest}
	if model, mem, ok := strings.Cut(rest, ":"); ok {
		p.Model = model
		if p.MemoryMiB, err = strconv.ParseInt(mem, 10, 64); err != nil || p.MemoryMiB < 0 {
			return Pool{}, fmt.Errorf("pool %q: bad memory %q (MiB per GPU)", s, mem)
		}
	}
	if p.Model == "" {
		return Pool{}, fmt.Errorf("pool %q: empty GPU model", s)
	}
	if p.MemoryMiB == 0 {
		if err := CheckGPUModel(p.Model); err != nil {
			return Pool{}, fmt.Errorf("pool %q: %w", s, err)
		}
	}
	return p, nil
}

// ParseLabels parses "k=v,k2=v2".
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints parses "key[=value]:Effect,...", as kubectl taint does.
func ParseTaints(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, t := range splitList(s) {
		kv, effect, ok := strings.Cut(t, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:Effect", t)
		}
		e := corev1.TaintEffect(effect)
		switch e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t, effect)
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return nil, fmt.Errorf("taint %q: empty key", t)
		}
		out = append(out, corev1.Taint{Key: k, Value: v, Effect: e})
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// poolName is the node-name prefix of a pool.
func (p Pool) poolName() string {
	if p.Name != "" {
		return p.Name
	}
	return "kwok-" + strings.ToLower(strings.NewReplacer("_", "-", ".", "-", " ", "-").Replace(p.Model))
}

// BuildNodes returns the fake nodes of the pools, in order. Pools with the same name prefix
// continue one numbering, so "--pool 2x8:A100 --pool 2x8:A100" gives kwok-a100-0..3.
func BuildNodes(pools []Pool) []*corev1.Node {
	next := map[string]int{}
	var out []*corev1.Node
	for _, p := range pools {
		prefix := p.poolName()
		for range p.Nodes {
			out = append(out, BuildNode(fmt.Sprintf("%s-%d", prefix, next[prefix]), p))
			next[prefix]++
		}
	}
	return out
}

// BuildNode returns one fake GPU node of pool p: kwok manages it (annotation
// kwok.x-k8s.io/node: fake), it has p.GPUsPerNode nvidia.com/gpu in capacity and allocatable,
// and the GPU feature-discovery labels.
func BuildNode(name string, p Pool) *corev1.Node {
	model := LookupGPUModel(p.Model)
	if p.MemoryMiB > 0 {
		model.MemoryMiB = p.MemoryMiB
	}
	labels := map[string]string{
		"kubernetes.io/arch":     "amd64",
		"kubernetes.io/os":       "linux",
		"kubernetes.io/hostname": name,
		"kubernetes.io/role":     "agent",
		LabelType:                TypeKwok,
		LabelPool:                p.poolName(),
		LabelGPUProduct:          model.Product,
		LabelGPUCount:            strconv.Itoa(p.GPUsPerNode),
	}
	if model.MemoryMiB > 0 {
		labels[LabelGPUMemory] = strconv.FormatInt(model.MemoryMiB, 10)
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("128"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPUResource:           *resource.NewQuantity(int64(p.GPUsPerNode), resource.DecimalSI),
	}
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{stages.FakeNodeAnnotation: stages.FakeNodeValue},
		},
		Spec: corev1.NodeSpec{Taints: append([]corev1.Taint(nil), p.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}
}
