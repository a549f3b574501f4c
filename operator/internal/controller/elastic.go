package controller

import (
	"github.com/pickyman/pickyman/api/v1alpha1"
)

// Elastic jobs (docs/operator.md, "Elastic jobs"). An elastic job's Allocation holds its
// current size in Spec.PodSets and its bounds in Spec.Elastic. A resize is a checkpoint
// request with Resize set: the job checkpoints at its epoch boundary and is suspended like
// any preempted job, then goes back to Queued with the Resize placement reserved for itself,
// and the scheduler admits it there at the new size: the Allocation's pod sets are changed
// first, then the job's replicas with its unsuspension.

// keepElasticSize keeps the size of an elastic job that the operator has admitted in spec,
// the Allocation spec read from the job: from its first admission on, the operator owns the
// elastic pod set's count (it writes the Allocation's first, then the job's), so a job whose
// replicas have not caught up yet does not undo a resize.
func keepElasticSize(a *v1alpha1.Allocation, spec *v1alpha1.AllocationSpec) {
	if a.Status.FirstAdmitted == nil || a.Spec.Elastic == nil || spec.Elastic == nil || a.Spec.Elastic.PodSet != spec.Elastic.PodSet {
		return
	}
	for i := range spec.PodSets {
		for _, cur := range a.Spec.PodSets {
			if spec.PodSets[i].Name == cur.Name && cur.Name == spec.Elastic.PodSet {
				spec.PodSets[i].Count = cur.Count
			}
		}
	}
}
