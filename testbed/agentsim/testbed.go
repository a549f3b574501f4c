package agentsim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// Testbed simulates the training of every pod on the fake nodes it serves.
type Testbed struct {
	Client client.Client
	Clock  clock.WithTicker
	Log    logr.Logger
	// NodeSelector selects the fake nodes to serve (for example type=kwok).
	NodeSelector labels.Selector
	Physics      Physics
	// TimeScale divides every trace-time duration (default 1).
	TimeScale float64
	Seed      int64
	// Tick is the real-time period of simulation steps (default 50ms).
	Tick time.Duration
	// PodSync is the real-time period of pod lists (default 1s).
	PodSync time.Duration

	Registry *api.Registry
	Coord    *coord.Coordinator

	mu       sync.Mutex
	nodes    map[string]*gpu.Fake
	trainers map[string]*trainer // by pod UID
	session  uint64
	// latest holds the newest checkpoint of the pods that resume from it by themselves
	// (AnnotationResumeLatest; resume.go).
	latest latestCheckpoints
}

// New wires a testbed: a registry and a coordinator that acts for the served nodes.
func New(c client.Client, clk clock.WithTicker, log logr.Logger, sel labels.Selector, ph Physics, scale float64, seed int64) *Testbed {
	if scale <= 0 {
		scale = 1
	}
	tb := &Testbed{Client: c, Clock: clk, Log: log, NodeSelector: sel, Physics: ph, TimeScale: scale, Seed: seed,
		nodes: map[string]*gpu.Fake{}, trainers: map[string]*trainer{}}
	tb.Coord = &coord.Coordinator{Client: c, Clock: clk, Log: log, Nodes: tb.serves, Counter: tb.counter, ResumeFallback: tb.latest.resume}
	tb.Registry = api.NewRegistry(clk, tb.Coord)
	tb.Coord.Registry = tb.Registry
	return tb
}

func (tb *Testbed) serves(node string) bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	_, ok := tb.nodes[node]
	return ok
}

// Backends returns the fake GPUs of every served node, for metrics.
func (tb *Testbed) Backends() map[string]gpu.Backend {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := make(map[string]gpu.Backend, len(tb.nodes))
	for n, f := range tb.nodes {
		out[n] = f
	}
	return out
}

// counter is the simulated receive counter of a trainer, by its synthetic pid.
func (tb *Testbed) counter(pid int) (int64, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, t := range tb.trainers {
		if int(t.caller.PID) == pid {
			return t.readBytes(tb.Clock.Now()), nil
		}
	}
	return 0, fmt.Errorf("no simulated process %d", pid)
}

// SyncNodes finds the fake nodes, gives each a fake GPU backend from its GPU
// feature-discovery labels (or its nvidia.com/gpu capacity), and publishes the GPU
// feature-discovery labels of that backend on every node whose labels differ, as the agent of
// a real node does.
func (tb *Testbed) SyncNodes(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := tb.Client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: tb.NodeSelector}); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	publish := map[string][]gpu.Device{}
	tb.mu.Lock()
	seen := map[string]bool{}
	for _, n := range nodes.Items {
		seen[n.Name] = true
		f, ok := tb.nodes[n.Name]
		if !ok {
			count, _ := strconv.Atoi(n.Labels[gpu.LabelCount])
			if q, ok := n.Status.Capacity["nvidia.com/gpu"]; ok && count == 0 {
				count = int(q.Value())
			}
			mem, _ := strconv.ParseUint(n.Labels[gpu.LabelMemory], 10, 64)
			product := n.Labels[gpu.LabelProduct]
			if product == "" {
				product = "fake-gpu"
			}
			if mem == 0 {
				mem = 81920
			}
			var err error
			f, err = gpu.NewFake(gpu.FakeConfig{Node: n.Name, Product: product, Count: count, MemoryMiB: mem})
			if err != nil {
				tb.Log.Error(err, "fake node", "node", n.Name)
				continue
			}
			tb.nodes[n.Name] = f
		}
		devs, err := f.Devices()
		if err != nil {
			continue
		}
		for k, v := range gpu.Labels(devs) {
			if n.Labels[k] != v {
				publish[n.Name] = devs
				break
			}
		}
	}
	for n := range tb.nodes {
		if !seen[n] {
			delete(tb.nodes, n)
		}
	}
	tb.mu.Unlock()
	var errs []error
	for node, devs := range publish {
		if err := coord.PublishGPULabels(ctx, tb.Client, node, devs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Step runs one simulation step: SyncPods, then Advance.
func (tb *Testbed) Step(ctx context.Context) error {
	if err := tb.SyncPods(ctx); err != nil {
		return err
	}
	return tb.Advance(ctx)
}

// SyncPods reads the pods of the served nodes into the registry, starts a trainer for every
// new running pod and drops the trainers of pods that are gone.
func (tb *Testbed) SyncPods(ctx context.Context) error {
	pods, err := tb.Coord.SyncPods(ctx)
	if err != nil {
		return err
	}
	now := tb.Clock.Now()
	live := map[string]bool{}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		live[string(p.UID)] = true
		if err := tb.ensureTrainer(p, now); err != nil {
			tb.Log.V(1).Info("not simulating pod", "pod", p.Namespace+"/"+p.Name, "reason", err.Error())
		}
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for uid, t := range tb.trainers {
		if !live[uid] {
			tb.latest.save(t)
			tb.release(t)
			delete(tb.trainers, uid)
		}
	}
	return nil
}

// Advance moves every trainer to now, completes finished pods, samples traffic and writes
// acknowledgements, progress and completions.
func (tb *Testbed) Advance(ctx context.Context) error {
	now := tb.Clock.Now()
	tb.mu.Lock()
	var done []*trainer
	for _, t := range tb.trainers {
		finished, err := t.step(ctx, tb.Registry, tb.Physics, tb.TimeScale, now)
		if err != nil {
			tb.Log.Error(err, "simulated training", "pod", t.pod.Key())
		}
		if finished {
			done = append(done, t)
		}
		tb.load(t)
	}
	tb.mu.Unlock()
	for _, t := range done {
		if t.clusterMember {
			// A Ray worker outlives the job: the job ends (the testbed dashboard reports it
			// from the progress), and KubeRay deletes the cluster.
			continue
		}
		tb.Coord.Annotate(t.pod, stages.CompleteAnnotation, stages.CompleteSucceeded)
	}
	tb.Coord.RefreshProgress()
	return tb.Coord.Flush(ctx)
}

func (tb *Testbed) ensureTrainer(p *corev1.Pod, now time.Time) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	uid := string(p.UID)
	if _, ok := tb.trainers[uid]; ok {
		return nil
	}
	spec, err := SpecFromPod(p)
	if err != nil {
		return err
	}
	pod, _ := tb.Registry.Pod(uid)
	tb.session++
	caller := api.Caller{Session: tb.session, PID: int32(tb.session), PodUID: uid}
	t, err := newTrainer(tb.Registry, pod, spec, p.Spec.NodeName, caller, jobNoise(tb.Seed, spec.Job, tb.Physics.NoiseSigma), tb.Physics, tb.TimeScale, now)
	if err != nil {
		return err
	}
	_, t.clusterMember = p.Labels[rayClusterLabel]
	t.resumeLatest = p.Annotations[AnnotationResumeLatest] == "true"
	tb.assign(t, p)
	tb.trainers[uid] = t
	return nil
}

// rayClusterLabel is the label KubeRay puts on every pod of a RayCluster.
const rayClusterLabel = "ray.io/cluster"

// assign gives the trainer free GPUs of its node. tb.mu held.
func (tb *Testbed) assign(t *trainer, p *corev1.Pod) {
	f := tb.nodes[t.node]
	if f == nil {
		return
	}
	devs, _ := f.Devices()
	container := ""
	if len(p.Spec.Containers) > 0 {
		container = p.Spec.Containers[0].Name
	}
	for _, d := range devs {
		if len(t.gpus) == t.spec.GPUs {
			break
		}
		if d.Pod == "" {
			_ = f.Assign(d.Index, p.Namespace, p.Name, container)
			t.gpus = append(t.gpus, d.Index)
		}
	}
}

// load sets the trainer's GPUs busy while it trains. tb.mu held.
func (tb *Testbed) load(t *trainer) {
	f := tb.nodes[t.node]
	if f == nil {
		return
	}
	util, mem := 0.0, 0.0
	switch t.phase {
	case training:
		util, mem = 95/t.noise.traffic, 0.7
	case starting, writing:
		util, mem = 5, 0.7
	}
	for _, i := range t.gpus {
		_ = f.Set(i, util, mem)
	}
}

func (tb *Testbed) release(t *trainer) {
	if f := tb.nodes[t.node]; f != nil {
		for _, i := range t.gpus {
			_ = f.Assign(i, "", "", "")
		}
	}
}

// Run steps until ctx ends: trainers advance every Tick, pods are re-listed every PodSync
// (default 1s; each list reads every pod of the cluster) and nodes every 10 s.
func (tb *Testbed) Run(ctx context.Context) error {
	tick := tb.Tick
	if tick <= 0 {
		tick = 50 * time.Millisecond
	}
	podSync := tb.PodSync
	if podSync <= 0 {
		podSync = time.Second
	}
	t := tb.Clock.NewTicker(tick)
	defer t.Stop()
	var lastNodes, lastPods time.Time
	for {
		if tb.Clock.Since(lastNodes) >= 10*time.Second {
			if err := tb.SyncNodes(ctx); err != nil && ctx.Err() == nil {
				tb.Log.Error(err, "sync nodes")
			}
			lastNodes = tb.Clock.Now()
		}
		if tb.Clock.Since(lastPods) >= podSync {
			if err := tb.SyncPods(ctx); err != nil && ctx.Err() == nil {
				tb.Log.Error(err, "sync pods")
			}
			lastPods = tb.Clock.Now()
		}
		if err := tb.Advance(ctx); err != nil && ctx.Err() == nil {
			tb.Log.Error(err, "testbed step")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}
