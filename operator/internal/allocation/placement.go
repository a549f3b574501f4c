package allocation

import (
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// ToAssignments turns a scheduling-core placement (GPUs per node) into per-pod-set node
// assignments. The mapping is deterministic: the slots are expanded into one node per
// worker, in slot order, and the pod sets take them in order (Master before Worker), each
// pod set's pods by index. The binder inverts it with NodeFor.
func ToAssignments(sets []v1alpha1.PodSet, slots []sched.Slot) []v1alpha1.NodeAssignment {
	var nodes []string
	var gpus []int32
	for _, s := range slots {
		per := int32(0)
		if s.Workers > 0 {
			per = s.GPUs / s.Workers
		}
		for range s.Workers {
			nodes = append(nodes, s.Node)
			gpus = append(gpus, per)
		}
	}
	var out []v1alpha1.NodeAssignment
	k := 0
	for _, ps := range sets {
		for range ps.Count {
			if k >= len(nodes) {
				return out
			}
			if n := len(out); n > 0 && out[n-1].PodSet == ps.Name && out[n-1].Node == nodes[k] {
				out[n-1].Pods++
				out[n-1].GPUs += gpus[k]
			} else {
				out = append(out, v1alpha1.NodeAssignment{PodSet: ps.Name, Node: nodes[k], Pods: 1, GPUs: gpus[k]})
			}
			k++
		}
	}
	return out
}

// ToSlots turns node assignments back into a scheduling-core placement: one slot per node,
// in the order the nodes first appear.
func ToSlots(as []v1alpha1.NodeAssignment) []sched.Slot {
	var out []sched.Slot
	idx := map[string]int{}
	for _, a := range as {
		i, ok := idx[a.Node]
		if !ok {
			i = len(out)
			idx[a.Node] = i
			out = append(out, sched.Slot{Node: a.Node})
		}
		out[i].Workers += a.Pods
		out[i].GPUs += a.GPUs
	}
	return out
}

// NodeFor returns the node of pod index of a pod set: the assignments of the pod set, in
// order, cover its indices 0, 1, ... .
func NodeFor(as []v1alpha1.NodeAssignment, podSet string, index int32) (string, bool) {
	if index < 0 {
		return "", false
	}
	seen := int32(0)
	for _, a := range as {
		if a.PodSet != podSet {
			continue
		}
		if index < seen+a.Pods {
			return a.Node, true
		}
		seen += a.Pods
	}
	return "", false
}

// GPUsByNode sums the GPUs of assignments per node.
func GPUsByNode(as []v1alpha1.NodeAssignment) map[string]int32 {
	out := map[string]int32{}
	for _, a := range as {
		out[a.Node] += a.GPUs
	}
	return out
}
