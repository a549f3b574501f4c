package jobframework

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// NodeView is what the scheduler reads from a Node.
type NodeView struct {
	GPUResource     corev1.ResourceName
	GPUProductLabel string
}

// SchedNode converts a Node; ok is false for a node without GPUs. A node is unschedulable
// when it is cordoned, carries a NoSchedule or NoExecute taint, or reports itself not Ready.
func (v NodeView) SchedNode(n *corev1.Node) (sched.Node, bool) {
	q, ok := n.Status.Allocatable[v.GPUResource]
	if !ok || q.Value() <= 0 {
		return sched.Node{}, false
	}
	out := sched.Node{Name: n.Name, GPUModel: n.Labels[v.GPUProductLabel], GPUs: int32(q.Value()), Unschedulable: n.Spec.Unschedulable}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out.Unschedulable = true
		}
	}
	// A node that reports itself not Ready takes no new gang, before the node lifecycle
	// controller taints it.
	if c := ReadyCondition(n); c != nil && c.Status != corev1.ConditionTrue {
		out.Unschedulable = true
	}
	return out, true
}

// ReadyCondition returns node n's Ready condition, nil if it has not reported one yet.
func ReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
