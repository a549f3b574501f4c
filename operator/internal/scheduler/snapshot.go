package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// BuildSnapshot assembles the scheduling core's snapshot: nodes with GPUs, their used GPUs,
// and every unfinished job. progress maps a job ID to its pods' progress.
//
// An Allocation without a phase (created by the job controller, not yet queued) is no job of
// the snapshot yet.
//
// A node's used GPUs are what is promised there and what is held there, whichever is more:
// for each Allocation, the larger of its placement on the node (while it holds GPUs) and the
// GPUs its live pods hold there (pods still terminating after the Allocation went back to
// Queued, an init container or sidecar larger than its pod set says); plus the GPUs held by
// every other live pod bound to the node (other workloads, and pods of a deleted job whose
// Allocation is gone). pods are the pods bound to nodes, of every workload; a pod counts
// until it has Succeeded or Failed.
func BuildSnapshot(now time.Time, nodes []*corev1.Node, allocs []*v1alpha1.Allocation, pods []*corev1.Pod, progress map[string]allocation.PodProgress, view jobframework.NodeView) *sched.Snapshot {
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = allocation.JobID(a)
	}
	return buildSnapshot(now, nodes, allocs, ids, pods, progress, view)
}

// buildSnapshot is BuildSnapshot with each Allocation's job ID given: ids[i] is
// allocation.JobID(allocs[i]).
func buildSnapshot(now time.Time, nodes []*corev1.Node, allocs []*v1alpha1.Allocation, ids []string, pods []*corev1.Pod, progress map[string]allocation.PodProgress, view jobframework.NodeView) *sched.Snapshot {
	s := &sched.Snapshot{Now: now, Nodes: make([]sched.Node, 0, len(nodes)), Jobs: make([]*sched.Job, 0, len(allocs))}
	idx := make(map[string]int, len(nodes))
	for _, node := range nodes {
		if n, ok := view.SchedNode(node); ok {
			idx[n.Name] = len(s.Nodes)
			s.Nodes = append(s.Nodes, n)
		}
	}
	// The snapshot is built at every cycle from 5,000 Allocations and as many pods, so it
	// indexes them by position and the nodes by their index, not by names (BenchmarkSnapshot).
	at := make(map[types.NamespacedName]int, len(allocs))
	for i, a := range allocs {
		at[types.NamespacedName{Namespace: a.Namespace, Name: a.Name}] = i
	}
	// held[i]: the GPUs the live pods of allocs[i] hold per node; the rest of the pods count
	// in full.
	held := make([][]nodeGPUs, len(allocs))
	for _, p := range pods {
		k, ok := idx[p.Spec.NodeName]
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		g := jobframework.GPULimit(&p.Spec, view.GPUResource)
		if g <= 0 {
			continue
		}
		if name, labelled := p.Labels[v1alpha1.LabelAllocation]; labelled {
			if i, known := at[types.NamespacedName{Namespace: p.Namespace, Name: name}]; known {
				held[i] = addGPUs(held[i], k, g)
				continue
			}
		}
		s.Nodes[k].Used += g
	}
	var promised []nodeGPUs
	// The jobs are held in one slice: one allocation instead of one per job.
	jobs := make([]sched.Job, len(allocs))
	for i, a := range allocs {
		promised = promised[:0]
		if allocation.HoldsGPUs(a) {
			for _, as := range a.Status.Placement {
				if k, ok := idx[as.Node]; ok {
					promised = addGPUs(promised, k, as.GPUs)
				}
			}
		}
		for _, pr := range promised {
			g, _ := gpusOn(held[i], pr.node)
			s.Nodes[pr.node].Used += max(pr.gpus, g)
		}
		for _, h := range held[i] {
			if _, ok := gpusOn(promised, h.node); !ok {
				s.Nodes[h.node].Used += h.gpus
			}
		}
		if a.Status.Phase == "" {
			// Created and not yet queued: the job controller's status write is about to
			// change it, and a decision on this version would fail on it.
			continue
		}
		if allocation.FillSchedJob(&jobs[i], ids[i], a, progress[ids[i]], now) {
			s.Jobs = append(s.Jobs, &jobs[i])
		}
	}
	return s
}

// nodeGPUs is a number of GPUs on the node of a snapshot's index.
type nodeGPUs struct {
	node int
	gpus int32
}

// addGPUs adds gpus on node to list, a job's few nodes.
func addGPUs(list []nodeGPUs, node int, gpus int32) []nodeGPUs {
	for i := range list {
		if list[i].node == node {
			list[i].gpus += gpus
			return list
		}
	}
	return append(list, nodeGPUs{node: node, gpus: gpus})
}

// gpusOn returns the GPUs of list on node, and whether list names node (with none, for a
// pod set placed without GPUs).
func gpusOn(list []nodeGPUs, node int) (int32, bool) {
	for _, e := range list {
		if e.node == node {
			return e.gpus, true
		}
	}
	return 0, false
}
