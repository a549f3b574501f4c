package controller

import (
	"context"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/rayjob"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// TestFreeSlotForPodsWithoutIndex: pods of a kind without pod indices (RayJob) fill the
// placement's slots node by node, counting pods the binder bound that the cache does not show
// bound yet, and never put more pods of a pod set on a node than the placement gives it.
func TestFreeSlotForPodsWithoutIndex(t *testing.T) {
	job := utiltesting.MakeRayJob("r", "ns").WorkerGroup("gpu", 3, 4).Obj()
	alloc := jobframework.AllocationName("RayJob", "r")
	g := (*rayjob.Job)(job)
	for _, tpl := range g.PodTemplates() {
		tpl.Labels = map[string]string{v1alpha1.LabelAllocation: alloc}
	}
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		p := utiltesting.MakeRayPod(job, "gpu", name)
		p.UID = types.UID(name)
		p.Spec.NodeName = node
		p.Status.Phase = phase
		return p
	}
	a := &v1alpha1.Allocation{
		ObjectMeta: metav1.ObjectMeta{Name: alloc, Namespace: "ns"},
		Status: v1alpha1.AllocationStatus{Phase: v1alpha1.AllocationAdmitted, Placement: []v1alpha1.NodeAssignment{
			{PodSet: "gpu", Node: "n1", Pods: 2, GPUs: 8}, {PodSet: "gpu", Node: "n2", Pods: 1, GPUs: 4},
		}},
	}
	h := newHarness(t, "fifo",
		pod("w1", "n1", corev1.PodRunning), pod("w2", "", corev1.PodPending), pod("w3", "", corev1.PodPending),
		pod("old", "n2", corev1.PodSucceeded))
	b := &Binder{Client: h.c}
	ctx := context.Background()
	next := func(name string) (string, int32) {
		t.Helper()
		p := pod(name, "", corev1.PodPending)
		node, idx, err := b.freeSlot(ctx, a, g, "gpu", p)
		if err != nil {
			t.Fatal(err)
		}
		return node, idx
	}
	if node, idx := next("w2"); node != "n1" || idx != 1 {
		t.Fatalf("second pod: %s slot %d, want n1 slot 1 (w1 holds slot 0; the ended pod on n2 holds none)", node, idx)
	}
	b.remember("w2", "n1") // bound; the cache still shows w2 unbound
	if node, idx := next("w3"); node != "n2" || idx != 2 {
		t.Fatalf("third pod: %s slot %d, want n2 slot 2 (n1 is full with w1 and w2)", node, idx)
	}
	b.remember("w3", "n2")
	if node, _ := next("w4"); node != "" {
		t.Fatalf("a fourth pod got a slot on %s; the placement has three", node)
	}
}
