package scheduler

import (
	"sync"
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
// A node's used GPUs are what is promised there and what is held there, whichever is more:
// for each Allocation, the larger of its placement on the node (while it holds GPUs) and the
// GPUs its live pods hold there (pods still terminating after the Allocation went back to
// Queued, an init container or sidecar larger than its pod set says); plus the GPUs held by
// every other live pod bound to the node (other workloads, and pods of a deleted job whose
// Allocation is gone). pods are the pods bound to nodes, of every workload; a pod counts
// until it has Succeeded or Failed.
func BuildSnapshot(now time.Time, nodes []corev1.Node, allocs []*v1alpha1.Allocation, pods []corev1.Pod, progress map[string]allocation.PodProgress, view jobframework.NodeView) *sched.Snapshot {
	return buildSnapshot(now, nodes, allocs, pods, progress, view, nil)
}

// buildSnapshot is BuildSnapshot with the job IDs and conversions of memo (nil: none kept).
func buildSnapshot(now time.Time, nodes []corev1.Node, allocs []*v1alpha1.Allocation, pods []corev1.Pod, progress map[string]allocation.PodProgress, view jobframework.NodeView, memo *jobMemo) *sched.Snapshot {
	s := &sched.Snapshot{Now: now}
	idx := map[string]int{}
	for i := range nodes {
		if n, ok := view.SchedNode(&nodes[i]); ok {
			idx[n.Name] = len(s.Nodes)
			s.Nodes = append(s.Nodes, n)
		}
	}
	known := make(map[types.NamespacedName]bool, len(allocs))
	for _, a := range allocs {
		known[types.NamespacedName{Namespace: a.Namespace, Name: a.Name}] = true
	}
	// held: Allocation -> node -> GPUs its live pods hold; the rest of the pods count in full.
	held := map[types.NamespacedName]map[string]int32{}
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
		if id := (types.NamespacedName{Namespace: p.Namespace, Name: name}); labelled && known[id] {
			if held[id] == nil {
				held[id] = map[string]int32{}
			}
			held[id][p.Spec.NodeName] += g
			continue
		}
		s.Nodes[k].Used += g
	}
	// The jobs are one allocation: a cycle at 5,000 jobs made as many objects before.
	jobs := make([]sched.Job, len(allocs))
	s.Jobs = make([]*sched.Job, 0, len(allocs))
	for i, a := range allocs {
		id := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
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
		if memo.job(&jobs[i], a, progress[memo.id(a)], now) {
			s.Jobs = append(s.Jobs, &jobs[i])
		}
	}
	return s
}

// jobMemo keeps, for each Allocation object that a cycle read from the informer's store, its
// job ID and its conversion into the core's job, so that the next cycle converts only the
// Allocations that changed: the store replaces an object on every change and never changes
// one in place, so an object seen before is unchanged. Converting and naming 5,000 jobs on
// every cycle, and the garbage it left, was most of a snapshot's time. Objects that are not
// the store's (the copies of writes in flight, assumed writes, a dropped reservation) are new
// to it on every cycle and converted each time.
//
// Entries of objects that recent cycles did not ask for are dropped once they are a quarter
// of the whole (end); an entry holds its object, so an address it knows cannot be reused for
// another object. A nil *jobMemo keeps nothing.
type jobMemo struct {
	mu      sync.Mutex
	entries map[*v1alpha1.Allocation]*memoJob
	// cycle counts the uses (begin); asked is the entries the current one asked for.
	cycle uint64
	asked int
}

type memoJob struct {
	id string
	// seen is the last use that asked for the entry.
	seen uint64
	// prog and job are the last conversion (valid when converted): job is StaticJob's.
	converted bool
	prog      allocation.PodProgress
	job       *sched.Job
}

// begin starts a cycle's use. It returns the function that ends it.
func (m *jobMemo) begin() func() {
	if m == nil {
		return func() {}
	}
	m.mu.Lock()
	if m.entries == nil {
		m.entries = map[*v1alpha1.Allocation]*memoJob{}
	}
	m.cycle++
	m.asked = 0
	return m.end
}

// end ends a use, dropping the entries it did not ask for if they are a quarter of all.
func (m *jobMemo) end() {
	defer m.mu.Unlock()
	if stale := len(m.entries) - m.asked; stale > 64 && 4*stale > len(m.entries) {
		for a, e := range m.entries {
			if e.seen != m.cycle {
				delete(m.entries, a)
			}
		}
	}
}

func (m *jobMemo) entry(a *v1alpha1.Allocation) *memoJob {
	e := m.entries[a]
	if e == nil {
		e = &memoJob{id: allocation.JobID(a)}
		m.entries[a] = e
	}
	if e.seen != m.cycle {
		e.seen = m.cycle
		m.asked++
	}
	return e
}

// id is allocation.JobID(a).
func (m *jobMemo) id(a *v1alpha1.Allocation) string {
	if m == nil {
		return allocation.JobID(a)
	}
	return m.entry(a).id
}

// job sets *j to allocation.SchedJob(a, prog, now) and reports whether there is one.
func (m *jobMemo) job(j *sched.Job, a *v1alpha1.Allocation, prog allocation.PodProgress, now time.Time) bool {
	if m == nil {
		c := allocation.SchedJob(a, prog, now)
		if c != nil {
			*j = *c
		}
		return c != nil
	}
	e := m.entry(a)
	if !e.converted || e.prog != prog {
		e.job, e.prog, e.converted = allocation.StaticJob(a, prog), prog, true
	}
	if e.job == nil {
		return false
	}
	*j = *e.job // the core's policies change a snapshot's jobs, never what they point to
	allocation.Advance(j, now)
	return true
}
