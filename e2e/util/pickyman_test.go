package util

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster"
)

func alloc(name string, phase pickymanv1.AllocationPhase, node string, gpus int32) *pickymanv1.Allocation {
	a := &pickymanv1.Allocation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	a.Status.Phase = phase
	a.Status.Placement = []pickymanv1.NodeAssignment{{Node: node, GPUs: gpus}}
	return a
}

func gpuPod(name, uid, node string, gpus int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID(uid)}}
	p.Spec.NodeName = node
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{cluster.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// TestRelistIsJudgedAsOneState: after a broken watch, the list that replaces what was known
// is checked once it is applied whole. A job that finished and the job admitted in its place
// while the watch was down are no over-commit; the same two seen one event at a time in the
// wrong order are, and so is a list that does over-commit a node.
func TestRelistIsJudgedAsOneState(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	for name, tc := range map[string]struct {
		apply func(w *GPUWatcher)
		want  int
	}{
		"allocations relisted": {apply: func(w *GPUWatcher) {
			w.allocSnapshot([]*pickymanv1.Allocation{alloc("b", pickymanv1.AllocationAdmitted, "n", 8), alloc("a", pickymanv1.AllocationFinished, "n", 8)})
		}},
		"allocations one at a time, admission first": {apply: func(w *GPUWatcher) {
			w.alloc(watch.Modified, alloc("b", pickymanv1.AllocationAdmitted, "n", 8))
			w.alloc(watch.Modified, alloc("a", pickymanv1.AllocationFinished, "n", 8))
		}, want: 1},
		"allocations relisted over capacity": {apply: func(w *GPUWatcher) {
			w.allocSnapshot([]*pickymanv1.Allocation{alloc("a", pickymanv1.AllocationAdmitted, "n", 8), alloc("b", pickymanv1.AllocationPreempting, "n", 4)})
		}, want: 1},
		"pods relisted": {apply: func(w *GPUWatcher) {
			w.podSnapshot(ctx, kube, []*corev1.Pod{gpuPod("b-0", "u2", "n", 8)})
		}},
		"pods relisted over capacity": {apply: func(w *GPUWatcher) {
			w.podSnapshot(ctx, kube, []*corev1.Pod{gpuPod("a-0", "u1", "n", 8), gpuPod("b-0", "u2", "n", 8)})
		}, want: 1},
	} {
		t.Run(name, func(t *testing.T) {
			w := newGPUWatcher()
			w.capacity["n"] = 8
			w.alloc(watch.Added, alloc("a", pickymanv1.AllocationAdmitted, "n", 8))
			w.pod(ctx, kube, watch.Added, gpuPod("a-0", "u1", "n", 8))
			tc.apply(w)
			if v, _ := w.Violations(); len(v) != tc.want {
				t.Errorf("%d violations, want %d: %v", len(v), tc.want, v)
			}
		})
	}
}
