package agentsim

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pickyman/pickyman/agent/pkg/coord"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// TestResumeLatest: a pod marked to resume from its newest checkpoint starts again, under
// the same name, from the checkpoint it wrote before it was deleted; an unmarked pod starts
// from the start, and a resume annotation wins over the saved checkpoint.
func TestResumeLatest(t *testing.T) {
	// The replay (testbed/replay.AnnotationResumeLatest) marks its pods with the same name;
	// this package cannot import it (the replay's dependencies break the NVML stubs' link).
	if AnnotationResumeLatest != "pickyman.dev/sim-resume-latest" {
		t.Fatalf("the agent reads %q", AnnotationResumeLatest)
	}
	ctx := context.Background()
	marked, plain := simPod("marked", "kwok-0", 20, "100s", 1), simPod("plain", "kwok-0", 20, "100s", 1)
	marked.Annotations[AnnotationResumeLatest] = "true"
	kube := fake.NewClientBuilder().WithObjects(fakeNode("kwok-0"), marked.DeepCopy(), plain.DeepCopy()).
		WithIndex(&corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	clk := clocktesting.NewFakeClock(t0)
	ph := DefaultPhysics()
	ph.NoiseSigma = 0
	tb := New(kube, clk, logr.Discard(), labels.SelectorFromSet(labels.Set{"type": "kwok"}), ph, 10, 1)
	if err := tb.SyncNodes(ctx); err != nil {
		t.Fatal(err)
	}
	for range 120 { // 60 s real, 600 s of trace time: a few epochs of 100 s after the start
		clk.Step(500 * time.Millisecond)
		if err := tb.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tb.mu.Lock()
	saved := map[string]agentv1alpha1.ResumePoint{}
	for _, tr := range tb.trainers {
		saved[tr.pod.Name] = tr.lastCkpt
	}
	tb.mu.Unlock()
	if saved["marked"].Epoch < 1 || saved["plain"].Epoch < 1 {
		t.Fatalf("no checkpoint written before the suspend: %v", saved)
	}
	// Kueue suspends the job: the pods go, and come back under their names with new UIDs.
	for _, p := range []*corev1.Pod{marked, plain} {
		if err := kube.Delete(ctx, p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Step(ctx); err != nil {
		t.Fatal(err)
	}
	withResume := simPod("annotated", "kwok-0", 20, "100s", 1)
	withResume.Annotations[AnnotationResumeLatest] = "true"
	withResume.Annotations[agentv1alpha1.AnnotationResumeFrom] = `{"epoch":7,"path":"sim://ns/annotated/epoch-7"}`
	tb.latest.mu.Lock()
	if tb.latest.by == nil {
		tb.latest.by = map[string]agentv1alpha1.ResumePoint{}
	}
	tb.latest.by["ns/annotated"] = agentv1alpha1.ResumePoint{Epoch: 2}
	tb.latest.mu.Unlock()
	for _, p := range []*corev1.Pod{marked, plain, withResume} {
		p = p.DeepCopy()
		p.UID, p.ResourceVersion = types.UID("again-"+p.Name), ""
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Step(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int32{"marked": saved["marked"].Epoch, "plain": 0, "annotated": 7} {
		p, ok := tb.Registry.Pod("again-" + name)
		if !ok {
			t.Fatalf("pod %s not registered", name)
		}
		if p.Resume.Epoch != want {
			t.Errorf("pod %s resumes from epoch %d, want %d", name, p.Resume.Epoch, want)
		}
		tb.mu.Lock()
		tr := tb.trainers["again-"+name]
		tb.mu.Unlock()
		if tr == nil || tr.epoch != want {
			t.Errorf("pod %s: trainer %+v, want it at epoch %d", name, tr, want)
		}
	}
}
