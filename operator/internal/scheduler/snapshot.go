package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// BuildSnapshot assembles the scheduling core's snapshot: nodes with GPUs, their used GPUs
// from the placements of Allocations that hold GPUs, and every unfinished job. progress maps
// a job ID to its pods' progress.
func BuildSnapshot(now time.Time, nodes []corev1.Node, allocs []v1alpha1.Allocation, progress map[string]allocation.PodProgress, view jobframework.NodeView) *sched.Snapshot {
	s := &sched.Snapshot{Now: now}
	idx := map[string]int{}
	for i := range nodes {
		if n, ok := view.SchedNode(&nodes[i]); ok {
			idx[n.Name] = len(s.Nodes)
			s.Nodes = append(s.Nodes, n)
		}
	}
	for i := range allocs {
		a := &allocs[i]
		if allocation.HoldsGPUs(a) {
			for node, g := range allocation.GPUsByNode(a.Status.Placement) {
				if k, ok := idx[node]; ok {
					s.Nodes[k].Used += g
				}
			}
		}
		if j := allocation.SchedJob(a, progress[allocation.JobID(a)], now); j != nil {
			s.Jobs = append(s.Jobs, j)
		}
	}
	return s
}
