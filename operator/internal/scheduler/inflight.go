package scheduler

import (
	"sync"
	"sync/atomic"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
)

// inflight holds the Allocation writes that cycles sent and that have not ended, as kube-
// scheduler's assumed pods stand for bindings in flight: a cycle returns once its writes are
// sent, and the next cycles decide while they are under way.
//
//   - The snapshot shows each of them in place of its listed Allocation (overlay), so a job
//     being admitted holds its GPUs from the cycle that decided it on. A write's record ends
//     after the write: a successful one is then in the cache or in Assumed, a failed one
//     left the Allocation as listed. A snapshot that took the record just before it ended
//     shows the write's result one cycle longer than needed, never less.
//   - A cycle whose decisions touch a job with a write in flight drops them all and
//     decides again when the writes end: the decision would be on a state the write is
//     about to change, and would fail on its resourceVersion anyway.
//   - The fence carries the promises of every write in flight, not only the last cycle's
//     (promises).
//
// The zero value is ready for use.
type inflight struct {
	mu     sync.Mutex
	writes map[string]*write
	// pledged are the fence promises of the writes in flight, by job ID.
	pledged map[string][]promise
	// sem bounds the writes sent at once, across batches.
	sem chan struct{}
	// waitingForSwap is set while the scheduler holds a cycle back until the fence swap in
	// flight ends; that swap's end then wakes it.
	waitingForSwap atomic.Bool
	// batches counts the batches whose writes have not all ended.
	batches sync.WaitGroup
}

// add records writes ws, with their fence promises, as in flight.
func (f *inflight) add(ws []*write, ps map[string][]promise) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writes == nil {
		f.writes, f.pledged = map[string]*write{}, map[string][]promise{}
	}
	for _, w := range ws {
		f.writes[w.job] = w
	}
	for job, p := range ps {
		if _, ok := f.writes[job]; ok {
			f.pledged[job] = p
		}
	}
}

// end ends the in-flight record of job's write.
func (f *inflight) end(job string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.writes, job)
	delete(f.pledged, job)
}

// has reports whether job has a write in flight.
func (f *inflight) has(job string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.writes[job]
	return ok
}

// len is the number of writes in flight.
func (f *inflight) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

// wants returns the Allocations as the writes in flight leave them, by job ID. The objects
// are shared: read them only.
func (f *inflight) wants() map[string]*v1alpha1.Allocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*v1alpha1.Allocation, len(f.writes))
	for job, w := range f.writes {
		out[job] = w.want
	}
	return out
}

// promises returns the fence promises of the writes in flight.
func (f *inflight) promises() []promise {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []promise
	for _, ps := range f.pledged {
		out = append(out, ps...)
	}
	return out
}

// overlay replaces, in items, every Allocation that has a write in wants by the Allocation
// as the write leaves it.
func overlay(items []*v1alpha1.Allocation, wants map[string]*v1alpha1.Allocation) {
	if len(wants) == 0 {
		return
	}
	for i := range items {
		if w, ok := wants[allocation.JobID(items[i])]; ok {
			items[i] = w.DeepCopy()
		}
	}
}

func (f *inflight) acquire(n int) {
	f.mu.Lock()
	if f.sem == nil {
		f.sem = make(chan struct{}, max(1, n))
	}
	sem := f.sem
	f.mu.Unlock()
	sem <- struct{}{}
}

func (f *inflight) release() {
	f.mu.Lock()
	sem := f.sem
	f.mu.Unlock()
	<-sem
}
