package agentsim

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fakeNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"type": "kwok", gpu.LabelProduct: "NVIDIA-A100-SXM4-80GB", gpu.LabelCount: "8", gpu.LabelMemory: "81920"}}}
}

func simPod(name, node string, epochs int, epochTime string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{LabelJobName: name},
			Annotations: map[string]string{
				AnnotationEpochTime:                epochTime,
				v1alpha1.AnnotationEpochs:          strconv.Itoa(epochs),
				v1alpha1.AnnotationDatasetBytes:    "100000000000",
				v1alpha1.AnnotationCheckpointBytes: "5000000000",
			}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "pytorch",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func getAnn(t *testing.T, c client.Client, name, key string) (string, bool) {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, p); err != nil {
		t.Fatal(err)
	}
	v, ok := p.Annotations[key]
	return v, ok
}

func TestTestbedSimulatesTraining(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientBuilder().WithObjects(
		fakeNode("kwok-0"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-0"}},
		simPod("short", "kwok-0", 2, "100s", 4),
		simPod("victim", "kwok-0", 5, "200s", 2),
		simPod("unserved", "real-0", 2, "100s", 1),
	).WithIndex(&corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	clk := clocktesting.NewFakeClock(t0)
	ph := DefaultPhysics()
	ph.NoiseSigma = 0 // exact times
	tb := New(kube, clk, logr.Discard(), labels.SelectorFromSet(labels.Set{"type": "kwok"}), ph, 10, 1)
	if err := tb.SyncNodes(ctx); err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration) {
		t.Helper()
		clk.Step(d)
		if err := tb.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	if _, ok := tb.Registry.Pod("uid-unserved"); ok {
		t.Fatal("a pod of a node the testbed does not serve is simulated")
	}
	// Start: (20 s + 30 s) / 10 = 5 s; then epochs of 10 s (short) and 20 s (victim).
	step(5 * time.Second)
	devs, _ := tb.Backends()["kwok-0"].Devices()
	busy := 0
	for _, d := range devs {
		if d.Utilization > 0 {
			busy++
		}
	}
	if busy != 6 {
		t.Errorf("%d busy GPUs, want 6 (4 + 2)", busy)
	}
	// Mid-epoch, the read rate is the dataset over the epoch: 100 GB / 20 s for the victim.
	for i := 0; i < 10; i++ {
		step(time.Second)
	}
	if p, _ := tb.Registry.Progress("uid-victim"); p.ReadRate < 4.9e9 || p.ReadRate > 5.1e9 {
		t.Errorf("victim read rate %.3g B/s, want 5e9", p.ReadRate)
	}
	// 1. The short job finishes its two epochs at 25 s and is completed.
	step(10 * time.Second)
	if v, _ := getAnn(t, kube, "short", stages.CompleteAnnotation); v != stages.CompleteSucceeded {
		t.Errorf("short pod: completion annotation %q, want %q", v, stages.CompleteSucceeded)
	}
	var prog agentv1alpha1.Progress
	v, _ := getAnn(t, kube, "short", agentv1alpha1.AnnotationProgress)
	if err := json.Unmarshal([]byte(v), &prog); err != nil || prog.EpochsDone != 2 || prog.ReadBytes != 2e11 || prog.EpochSeconds != 10 {
		t.Errorf("short progress %+v (%v), want 2 epochs of 10 s and 200 GB read", prog, err)
	}
	// 2. The victim is in epoch 1 (25..45 s); a boundary request at 30 s is acknowledged at
	//    the epoch end plus the checkpoint write (5 GB at 500 MB/s = 10 s, /10 = 1 s).
	req, _ := json.Marshal(agentv1alpha1.CheckpointRequest{ID: "p1", Mode: agentv1alpha1.ModeBoundary})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(req)}}})
	victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "victim"}}
	if err := kube.Patch(ctx, victim, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	step(5 * time.Second) // 30 s: request seen
	step(15 * time.Second)
	if _, ok := getAnn(t, kube, "victim", agentv1alpha1.AnnotationCheckpointAck); ok {
		t.Fatal("acknowledged before the checkpoint was written")
	}
	step(time.Second)
	v, ok := getAnn(t, kube, "victim", agentv1alpha1.AnnotationCheckpointAck)
	if !ok {
		t.Fatal("no acknowledgement")
	}
	var ack agentv1alpha1.CheckpointAck
	if err := json.Unmarshal([]byte(v), &ack); err != nil {
		t.Fatal(err)
	}
	want := agentv1alpha1.CheckpointAck{RequestID: "p1", Epoch: 2, Path: "sim://ns/victim/epoch-2", Bytes: 5e9, Seconds: 1, SuspendSeconds: 16, Time: t0.Add(46 * time.Second)}
	if diff := cmp.Diff(want, ack); diff != "" {
		t.Errorf("ack (-want +got):\n%s", diff)
	}
	// 3. The operator suspends the job: its pod goes away and its GPUs go idle.
	if err := kube.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	step(time.Second)
	devs, _ = tb.Backends()["kwok-0"].Devices()
	for _, d := range devs {
		if d.Pod == "victim" {
			t.Errorf("GPU %d still assigned to the deleted pod", d.Index)
		}
	}
	// 4. Resumed from epoch 2: start + load (5 GB at 1 GB/s = 5 s, /10) + warm-up = 5.5 s.
	resumed := simPod("victim", "kwok-0", 5, "200s", 2)
	resumed.UID = "uid-victim-2"
	rp, _ := json.Marshal(agentv1alpha1.ResumePoint{Epoch: 2, Path: ack.Path})
	resumed.Annotations[agentv1alpha1.AnnotationResumeFrom] = string(rp)
	if err := kube.Create(ctx, resumed); err != nil {
		t.Fatal(err)
	}
	step(0)
	step(5400 * time.Millisecond)
	if p, _ := tb.Registry.Progress("uid-victim-2"); p.EpochStart.IsZero() == false {
		t.Errorf("epoch began before the checkpoint was loaded: %+v", p)
	}
	step(200 * time.Millisecond)
	if p, _ := tb.Registry.Progress("uid-victim-2"); p.Epoch != 2 || p.EpochStart.IsZero() {
		t.Errorf("resumed progress %+v, want epoch 2 under way", p)
	}
}

func TestTestbedSuspendNowLosesThePartialEpoch(t *testing.T) {
	ctx := context.Background()
	req, _ := json.Marshal(agentv1alpha1.CheckpointRequest{ID: "n1", Mode: agentv1alpha1.ModeNow})
	p := simPod("job", "kwok-0", 4, "100s", 1)
	kube := fake.NewClientBuilder().WithObjects(fakeNode("kwok-0"), p).
		WithIndex(&corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	clk := clocktesting.NewFakeClock(t0)
	ph := DefaultPhysics()
	ph.NoiseSigma = 0
	tb := New(kube, clk, logr.Discard(), labels.SelectorFromSet(labels.Set{"type": "kwok"}), ph, 10, 1)
	if err := tb.SyncNodes(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, 5 * time.Second, 10 * time.Second, 4 * time.Second} { // 19 s: 40% into epoch 1
		clk.Step(d)
		if err := tb.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(req)}}})
	if err := kube.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Step(ctx); err != nil {
		t.Fatal(err)
	}
	v, ok := getAnn(t, kube, "job", agentv1alpha1.AnnotationCheckpointAck)
	if !ok {
		t.Fatal("a suspend-now was not acknowledged at once")
	}
	var ack agentv1alpha1.CheckpointAck
	if err := json.Unmarshal([]byte(v), &ack); err != nil {
		t.Fatal(err)
	}
	// The periodic checkpoint of epoch 0's end: epoch 1's 4 s are lost.
	want := agentv1alpha1.CheckpointAck{RequestID: "n1", Epoch: 1, Path: "sim://ns/job/epoch-1", Time: t0.Add(19 * time.Second)}
	if diff := cmp.Diff(want, ack); diff != "" {
		t.Errorf("ack (-want +got):\n%s", diff)
	}
}

// TestSyncNodesPublishesGPULabels: a fake node known only by its GPU capacity gets the GPU
// feature-discovery labels of its fake GPUs, as a real agent publishes them; a node whose
// labels are right is not patched.
func TestSyncNodesPublishesGPULabels(t *testing.T) {
	ctx := context.Background()
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-bare", Labels: map[string]string{"type": "kwok"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(4, resource.DecimalSI)}}}
	kube := fake.NewClientBuilder().WithObjects(bare, fakeNode("kwok-0")).Build()
	tb := New(kube, clocktesting.NewFakeClock(t0), logr.Discard(), labels.SelectorFromSet(labels.Set{"type": "kwok"}), DefaultPhysics(), 1, 1)
	before := &corev1.Node{}
	if err := kube.Get(ctx, types.NamespacedName{Name: "kwok-0"}, before); err != nil {
		t.Fatal(err)
	}
	if err := tb.SyncNodes(ctx); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := kube.Get(ctx, types.NamespacedName{Name: "kwok-bare"}, got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"type": "kwok", gpu.LabelCount: "4", gpu.LabelProduct: "fake-gpu", gpu.LabelMemory: "81920"}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels of the bare node (-want +got):\n%s", diff)
	}
	if err := kube.Get(ctx, types.NamespacedName{Name: "kwok-0"}, got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != before.ResourceVersion {
		t.Errorf("a node with the right labels was patched")
	}
	if diff := cmp.Diff(fakeNode("kwok-0").Labels, got.Labels); diff != "" {
		t.Errorf("labels of the labelled node changed (-want +got):\n%s", diff)
	}
}

// TestRayWorkerOutlivesItsTraining: a pod of a RayCluster reports all its epochs done but is
// not completed (a Ray worker outlives its job; KubeRay deletes the cluster), while a pod of
// another kind finishing at the same time is.
func TestRayWorkerOutlivesItsTraining(t *testing.T) {
	ctx := context.Background()
	ray := simPod("ray-worker", "kwok-0", 2, "100s", 4)
	ray.Labels["ray.io/cluster"] = "r-raycluster"
	kube := fake.NewClientBuilder().WithObjects(fakeNode("kwok-0"), ray, simPod("plain", "kwok-0", 2, "100s", 4)).
		WithIndex(&corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	clk := clocktesting.NewFakeClock(t0)
	ph := DefaultPhysics()
	ph.NoiseSigma = 0
	tb := New(kube, clk, logr.Discard(), labels.SelectorFromSet(labels.Set{"type": "kwok"}), ph, 10, 1)
	if err := tb.SyncNodes(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, 5 * time.Second, 10 * time.Second, 10 * time.Second, time.Second} {
		clk.Step(d)
		if err := tb.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := getAnn(t, kube, "plain", stages.CompleteAnnotation); v != stages.CompleteSucceeded {
		t.Errorf("plain pod: completion annotation %q, want %q", v, stages.CompleteSucceeded)
	}
	if v, ok := getAnn(t, kube, "ray-worker", stages.CompleteAnnotation); ok {
		t.Errorf("Ray worker completed (%q); it must keep running", v)
	}
	var prog agentv1alpha1.Progress
	v, _ := getAnn(t, kube, "ray-worker", agentv1alpha1.AnnotationProgress)
	if err := json.Unmarshal([]byte(v), &prog); err != nil || prog.EpochsDone != 2 {
		t.Errorf("Ray worker progress %+v (%v), want its 2 epochs done", prog, err)
	}
}
