package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"

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
func BuildSnapshot(now time.Time, nodes []*corev1.Node, allocs []*v1alpha1.Allocation, pods []corev1.Pod, progress map[string]allocation.PodProgress, view jobframework.NodeView) *sched.Snapshot {
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = allocation.JobID(a)
	}
	return buildSnapshot(now, nodes, allocs, ids, pods, progress, view)
}

// buildSnapshot is BuildSnapshot with each Allocation's job ID given: ids[i] is
// allocation.JobID(allocs[i]).
func buildSnapshot(now time.Time, nodes []*corev1.Node, allocs []*v1alpha1.Allocation, ids []string, pods []corev1.Pod, progress map[string]allocation.PodProgress, view jobframework.NodeView) *sched.Snapshot {
	s := &sched.Snapshot{Now: now}
	idx := map[string]int{}
	for _, node := range nodes {
		if n, ok := view.SchedNode(node); ok {
			idx[n.Name] = len(s.Nodes)
			s.Nodes = append(s.Nodes, n)
		}
	}
	known := make(map[string]bool, len(allocs))
	for _, id := range ids {
		known[id] = true
	}
	// held: job ID -> node -> GPUs its live pods hold; the rest of the pods count in full.
	held := map[string]map[string]int32{}
	for i := range pods {
		p := &pods[i]
		k, ok := idx[p.Spec.NodeName]
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		g := jobframework.GPULimit(&p.Spec, view.GPUResource)
		if g <= 0 {
			continue
		}
		name, labelled := p.Labels[v1alpha1.LabelAllocation]
		if id := p.Namespace + "/" + name; labelled && known[id] {
			if held[id] == nil {
				held[id] = map[string]int32{}
			}
			held[id][p.Spec.NodeName] += g
			continue
		}
		s.Nodes[k].Used += g
	}
	for i, a := range allocs {
		id := ids[i]
		var promised map[string]int32
		if allocation.HoldsGPUs(a) {
			promised = allocation.GPUsByNode(a.Status.Placement)
		}
		for node, g := range promised {
			if k, ok := idx[node]; ok {
				s.Nodes[k].Used += max(g, held[id][node])
			}
		}
		for node, g := range held[id] {
			if _, ok := promised[node]; !ok {
				s.Nodes[idx[node]].Used += g
			}
		}
		if a.Status.Phase == "" {
			// Created and not yet queued: the job controller's status write is about to
			// change it, and a decision on this version would fail on it.
			continue
		}
		if j := allocation.SchedJob(a, progress[id], now); j != nil {
			s.Jobs = append(s.Jobs, j)
		}
	}
	return s
}
