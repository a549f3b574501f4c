package jobframework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSchedNodeUnschedulable(t *testing.T) {
	view := NodeView{GPUResource: "nvidia.com/gpu", GPUProductLabel: "nvidia.com/gpu.product"}
	ready := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}
	}
	for name, tc := range map[string]struct {
		edit func(*corev1.Node)
		want bool
	}{
		"ready":            {edit: func(n *corev1.Node) { n.Status.Conditions = ready(corev1.ConditionTrue) }},
		"not reported yet": {edit: func(*corev1.Node) {}},
		"cordoned":         {edit: func(n *corev1.Node) { n.Spec.Unschedulable = true }, want: true},
		"NoSchedule taint": {edit: func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }, want: true},
		"PreferNoSchedule": {edit: func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}
		}},
		"NotReady":      {edit: func(n *corev1.Node) { n.Status.Conditions = ready(corev1.ConditionFalse) }, want: true},
		"Ready unknown": {edit: func(n *corev1.Node) { n.Status.Conditions = ready(corev1.ConditionUnknown) }, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
				Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
			tc.edit(n)
			got, ok := view.SchedNode(n)
			if !ok || got.GPUs != 8 {
				t.Fatalf("SchedNode: %+v, %v", got, ok)
			}
			if got.Unschedulable != tc.want {
				t.Errorf("Unschedulable = %v, want %v", got.Unschedulable, tc.want)
			}
		})
	}
}
