package cluster

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestParsePool(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    Pool
		wantErr bool
	}{
		"known model":        {in: "4x8:A100", want: Pool{Nodes: 4, GPUsPerNode: 8, Model: "A100"}},
		"upper-case X":       {in: "2X4:V100", want: Pool{Nodes: 2, GPUsPerNode: 4, Model: "V100"}},
		"memory given":       {in: "1x2:MyGPU:16384", want: Pool{Nodes: 1, GPUsPerNode: 2, Model: "MyGPU", MemoryMiB: 16384}},
		"no model":           {in: "4x8", wantErr: true},
		"empty model":        {in: "4x8:", wantErr: true},
		"no x":               {in: "48:A100", wantErr: true},
		"negative nodes":     {in: "-1x8:A100", wantErr: true},
		"bad gpus":           {in: "1xeight:A100", wantErr: true},
		"bad memory":         {in: "1x8:A100:lots", wantErr: true},
		"zero nodes is fine": {in: "0x8:A100", want: Pool{GPUsPerNode: 8, Model: "A100"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePool(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePool(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePool(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseTaintsAndLabels(t *testing.T) {
	taints, err := ParseTaints("gpu=true:NoSchedule, dedicated:PreferNoSchedule")
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Taint{
		{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	if diff := cmp.Diff(want, taints); diff != "" {
		t.Errorf("ParseTaints (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"gpu=true", "gpu:Sometimes", "=v:NoSchedule"} {
		if _, err := ParseTaints(bad); err == nil {
			t.Errorf("ParseTaints(%q) accepted", bad)
		}
	}
	labels, err := ParseLabels("zone=a,rack=r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"zone": "a", "rack": "r1"}, labels); diff != "" {
		t.Errorf("ParseLabels (-want +got):\n%s", diff)
	}
	if _, err := ParseLabels("zone"); err == nil {
		t.Error("ParseLabels(\"zone\") accepted")
	}
}

func TestBuildNodesNamesAndGPUs(t *testing.T) {
	nodes := BuildNodes([]Pool{
		{Nodes: 2, GPUsPerNode: 8, Model: "A100"},
		{Nodes: 1, GPUsPerNode: 4, Model: "V100"},
		{Nodes: 1, GPUsPerNode: 8, Model: "a100"},
	})
	type summary struct {
		Name, Product, Count, Memory, Fake string
		GPUs                               int64
	}
	var got []summary
	for _, n := range nodes {
		gpu := n.Status.Allocatable[GPUResource]
		capGPU := n.Status.Capacity[GPUResource]
		if gpu.Cmp(capGPU) != 0 {
			t.Errorf("%s: allocatable %v != capacity %v", n.Name, gpu, capGPU)
		}
		got = append(got, summary{n.Name, n.Labels[LabelGPUProduct], n.Labels[LabelGPUCount],
			n.Labels[LabelGPUMemory], n.Annotations["kwok.x-k8s.io/node"], gpu.Value()})
	}
	want := []summary{
		{"kwok-a100-0", "NVIDIA-A100-SXM4-80GB", "8", "81920", "fake", 8},
		{"kwok-a100-1", "NVIDIA-A100-SXM4-80GB", "8", "81920", "fake", 8},
		{"kwok-v100-0", "Tesla-V100-SXM2-32GB", "4", "32768", "fake", 4},
		{"kwok-a100-2", "NVIDIA-A100-SXM4-80GB", "8", "81920", "fake", 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildNodes (-want +got):\n%s", diff)
	}
}

// TestBuildNodeGolden pins the whole Node object; run with -update to rewrite it.
func TestBuildNodeGolden(t *testing.T) {
	p, err := ParsePool("1x8:H100")
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"zone": "a"}
	p.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	got, err := yaml.Marshal(BuildNodes([]Pool{p})[0])
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "node-h100.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("node (-golden +got):\n%s", diff)
	}
}

func TestLookupGPUModelUnknown(t *testing.T) {
	if diff := cmp.Diff(GPUModel{Product: "Gaudi2"}, LookupGPUModel("Gaudi2")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	n := BuildNode("x", Pool{Nodes: 1, GPUsPerNode: 1, Model: "Gaudi2"})
	if _, ok := n.Labels[LabelGPUMemory]; ok {
		t.Errorf("unknown memory should leave %s unset, got %q", LabelGPUMemory, n.Labels[LabelGPUMemory])
	}
}

// TestParsePoolUnknownModel: a model that is not known and has no memory is an error that
// lists the known models; with its memory it is a product name.
func TestParsePoolUnknownModel(t *testing.T) {
	_, err := ParsePool("4x8:A10O")
	want := `pool "4x8:A10O": unknown GPU model "A10O" (known: A10, A100, A100-40GB, A40, H100, L4, P100, T4, V100;`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ParsePool error = %v, want it to contain %q", err, want)
	}
	if got, err := ParsePool("4x8:a100"); err != nil || got.Model != "a100" || LookupGPUModel(got.Model).MemoryMiB != 81920 {
		t.Errorf("ParsePool(4x8:a100) = %+v, %v; want the A100 in any case", got, err)
	}
	if got, err := ParsePool("2x4:Gaudi2:98304"); err != nil || got.MemoryMiB != 98304 {
		t.Errorf("ParsePool(2x4:Gaudi2:98304) = %+v, %v; want a product with its memory", got, err)
	}
	if err := CheckGPUModel("H100"); err != nil {
		t.Errorf("CheckGPUModel(H100) = %v", err)
	}
}

// FuzzParsePool: any string parses or fails, and what parses has a model.
func FuzzParsePool(f *testing.F) {
	for _, s := range []string{"4x8:A100", "2x4:V100:16384", "1x2:MyGPU:16384", "4x8:", "x:", "1x1:A100:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePool(s)
		if err == nil && p.Model == "" {
			t.Errorf("ParsePool(%q) = %+v: no model", s, p)
		}
	})
}
