package sched

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Index gives a policy the views of a Snapshot it needs at every cycle: jobs by phase (in
// snapshot order), jobs by ID, and which suspending jobs free GPUs for which queued job.
// Building one is O(jobs); the map by ID is built on the first Job call, since most cycles
// never look a job up by ID. An Index is read-only and safe for concurrent use; it does not
// copy the jobs.
type Index struct {
	Queued     []*Job
	Running    []*Job
	Suspending []*Job

	jobs []*Job
	// reserving holds the queued jobs with a reservation, in snapshot order.
	reserving  []*Job
	byIDOnce   sync.Once
	byID       map[string]*Job
	freeingFor map[string][]*Job
}

// NewIndex indexes the jobs of s.
func NewIndex(s *Snapshot) *Index {
	ix := &Index{jobs: s.Jobs}
	ix.add(s.Jobs)
	return ix
}

// Scratch is memory a policy keeps from one cycle to the next, so that indexing a snapshot
// allocates nothing once its slices have grown to the snapshot's size. A simulator runs
// hundreds of thousands of cycles over queues of thousands of jobs, and building each
// cycle's index afresh spent much of its time collecting garbage. The Index and Plan built
// from a Scratch are valid until the next call on it; the zero value is ready to use.
type Scratch struct {
	ix Index
}

// Index indexes the jobs of s in the scratch's memory (see NewIndex).
func (sc *Scratch) Index(s *Snapshot) *Index {
	prev := &sc.ix
	clear(prev.Queued)
	clear(prev.Running)
	clear(prev.Suspending)
	clear(prev.reserving)
	sc.ix = Index{jobs: s.Jobs, Queued: prev.Queued[:0], Running: prev.Running[:0], Suspending: prev.Suspending[:0], reserving: prev.reserving[:0]}
	sc.ix.add(s.Jobs)
	return &sc.ix
}

// NewPlan starts a plan for s on the scratch's index (see NewPlan).
func (sc *Scratch) NewPlan(s *Snapshot) *Plan { return newPlan(s, sc.Index(s)) }

// SortInto sets dst to jobs sorted by cmp, reusing dst's memory, and returns it.
func SortInto(dst, jobs []*Job, cmp func(a, b *Job) int) []*Job {
	clear(dst)
	dst = append(dst[:0], jobs...)
	slices.SortFunc(dst, cmp)
	return dst
}

// KeySorter sorts jobs by an integer key, then in arrival order (CompareArrival),
// computing each job's key once per sort rather than twice per comparison. It pays where the
// key is computed (Tiresias' queue index); where the order reads plain fields, SortInto with
// a comparator is cheaper (FIFO; docs/simulator.md). Its memory is reused from one sort to
// the next; the zero value is ready to use.
type KeySorter struct {
	keys []sortKey
}

type sortKey struct {
	key  int64
	sec  int64 // submit time
	nsec int32
	j    *Job
}

func compareSortKey(a, b sortKey) int {
	if a.key != b.key {
		return cmp.Compare(a.key, b.key)
	}
	if a.sec != b.sec {
		return cmp.Compare(a.sec, b.sec)
	}
	if a.nsec != b.nsec {
		return cmp.Compare(a.nsec, b.nsec)
	}
	return strings.Compare(a.j.ID, b.j.ID)
}

// Sort sets dst to jobs sorted by key (ascending), then by arrival, reusing dst's memory,
// and returns it.
func (ks *KeySorter) Sort(dst, jobs []*Job, key func(*Job) int64) []*Job {
	keys := ks.keys[:0]
	for _, j := range jobs {
		keys = append(keys, sortKey{key: key(j), sec: j.Submit.Unix(), nsec: int32(j.Submit.Nanosecond()), j: j})
	}
	slices.SortFunc(keys, compareSortKey)
	clear(dst)
	dst = dst[:0]
	for _, k := range keys {
		dst = append(dst, k.j)
	}
	clear(keys)
	ks.keys = keys
	return dst
}

func (ix *Index) add(jobs []*Job) {
	for _, j := range jobs {
		switch j.Phase {
		case Queued:
			ix.Queued = append(ix.Queued, j)
			if len(j.Reserved) > 0 {
				ix.reserving = append(ix.reserving, j)
			}
		case Running:
			ix.Running = append(ix.Running, j)
		case Suspending:
			ix.Suspending = append(ix.Suspending, j)
			if j.Suspend != nil && j.Suspend.For != "" {
				if ix.freeingFor == nil {
					ix.freeingFor = make(map[string][]*Job)
				}
				ix.freeingFor[j.Suspend.For] = append(ix.freeingFor[j.Suspend.For], j)
			}
		}
	}
}

// Job returns the job with the given ID, or nil.
func (ix *Index) Job(id string) *Job {
	ix.byIDOnce.Do(func() {
		ix.byID = make(map[string]*Job, len(ix.jobs))
		for _, j := range ix.jobs {
			ix.byID[j.ID] = j
		}
	})
	return ix.byID[id]
}

// FreeingFor lists the suspending jobs whose GPUs are being freed for the queued job id.
func (ix *Index) FreeingFor(id string) []*Job { return ix.freeingFor[id] }

// Hold returns the part of queued job q's reservation that is held out of the free GPUs:
// on each node, the reserved GPUs minus the GPUs that jobs suspending for q still hold
// there (those are counted in Node.Used until they are freed, and must not be counted
// twice). Nil if q has no reservation.
func (ix *Index) Hold(q *Job) []Slot {
	if q.Phase != Queued || len(q.Reserved) == 0 {
		return nil
	}
	return HoldOf(q.Reserved, ix.freeingFor[q.ID])
}

// ReservedOn returns, per node name, the GPUs held out of the free GPUs by the
// reservations of queued jobs (see Hold).
func (ix *Index) ReservedOn() map[string]int32 {
	out := make(map[string]int32)
	for _, q := range ix.reserving {
		for _, sl := range ix.Hold(q) {
			out[sl.Node] += sl.GPUs
		}
	}
	return out
}

// HoldOf computes, per node of reservation, the GPUs that are held out of the free GPUs
// while the jobs in freeing (suspending or being preempted for the reserving job) still
// hold theirs: max(0, reserved on node - GPUs of freeing jobs on node). Slots with nothing
// to hold are left out.
func HoldOf(reservation []Slot, freeing []*Job) []Slot {
	var out []Slot
	for _, sl := range reservation {
		h := sl.GPUs
		for _, f := range freeing {
			h -= FreedOn(f, sl.Node)
		}
		if h > 0 {
			out = append(out, Slot{Node: sl.Node, Workers: sl.Workers, GPUs: h})
		}
	}
	return out
}

// HoldOfFreed is HoldOf for GPUs being freed given as slots (a resize frees only part of
// a job's placement): max(0, reserved on node - freed on node).
func HoldOfFreed(reservation []Slot, freed []Slot) []Slot {
	var out []Slot
	for _, sl := range reservation {
		if h := sl.GPUs - GPUsOn(freed, sl.Node); h > 0 {
			out = append(out, Slot{Node: sl.Node, Workers: sl.Workers, GPUs: h})
		}
	}
	return out
}

// FreedOn returns the GPUs suspending job f gives back on node when its checkpoint is
// written: all it holds there, less what a resize keeps.
func FreedOn(f *Job, node string) int32 {
	n := GPUsOn(f.Placement, node)
	if f.Resizing() {
		n -= GPUsOn(f.Suspend.Resize, node)
	}
	return max(n, 0)
}

// Freed returns, by node, the part of placement that a resize to target gives back.
func Freed(placement, target []Slot) []Slot {
	var out []Slot
	for _, sl := range placement {
		if d := sl.GPUs - GPUsOn(target, sl.Node); d > 0 {
			out = append(out, Slot{Node: sl.Node, Workers: d / max(1, sl.GPUs/max(1, sl.Workers)), GPUs: d})
		}
	}
	return out
}

// Added returns, by node, the part of target that placement does not hold yet (what a
// grow must promise).
func Added(placement, target []Slot) []Slot { return Freed(target, placement) }

// Union returns, by node, the larger of the two placements' slots: what a job holds while
// it resizes from placement to target.
func Union(placement, target []Slot) []Slot {
	out := append([]Slot(nil), placement...)
	for _, sl := range target {
		i := -1
		for k := range out {
			if out[k].Node == sl.Node {
				i = k
				break
			}
		}
		switch {
		case i < 0:
			out = append(out, sl)
		case sl.GPUs > out[i].GPUs:
			out[i] = sl
		}
	}
	return out
}

// GPUsOn returns the GPUs a placement uses on the named node.
func GPUsOn(placement []Slot, node string) int32 {
	var n int32
	for _, sl := range placement {
		if sl.Node == node {
			n += sl.GPUs
		}
	}
	return n
}

// PlacementGPUs returns the GPUs of a placement.
func PlacementGPUs(placement []Slot) int32 {
	var n int32
	for _, sl := range placement {
		n += sl.GPUs
	}
	return n
}
