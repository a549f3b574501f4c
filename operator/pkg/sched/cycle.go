package sched

import (
	"slices"
	"sort"
	"strings"
)

// CompareArrival orders jobs by submit time, then by ID: the FIFO order.
func CompareArrival(a, b *Job) int {
	if c := a.Submit.Compare(b.Submit); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Sorted returns a copy of jobs sorted by cmp. cmp must be a total order (break ties by
// ID, as CompareArrival does) so that the result does not depend on the input order.
func Sorted(jobs []*Job, cmp func(a, b *Job) int) []*Job { return SortInto(nil, jobs, cmp) }

// AdmitReserved starts every queued job whose reservation is usable and entirely free
// now. Policies call it first: reserved GPUs are held for those jobs whatever the queue
// order, and starting them first lets the rest of the cycle stop early once no free GPUs
// remain.
func (p *Plan) AdmitReserved() {
	for _, j := range p.Index.reserving {
		if p.View.ValidReservation(j) {
			p.Admit(j)
		}
	}
}

// Pending reports whether Admit would only wait for j: it holds a usable reservation or
// jobs are being suspended for it.
func (p *Plan) Pending(j *Job) bool {
	return (len(j.Reserved) > 0 && p.View.ValidReservation(j)) || len(p.Index.FreeingFor(j.ID)) > 0
}

// Shadow holds, for a queued job j that does not fit now, the GPUs that later jobs must
// leave to it so as not to delay it: the backfill rule when run times are unknown. j's
// shadow placement is where PlaceGang would put it if every running and suspending job
// gave its GPUs back (reservations stay held); on each node of it, later jobs may use only
// the GPUs beyond what j needs there, so that j can start as soon as the jobs now running
// there end, whatever the backfilled jobs do. It reports false if j has no shadow
// placement (it never fits).
func (p *Plan) Shadow(j *Job) bool {
	empty := *p.Snapshot
	empty.Nodes = slices.Clone(p.Snapshot.Nodes)
	for i := range empty.Nodes {
		empty.Nodes[i].Used = 0
	}
	shadow, ok := NewView(&empty, p.Index).PlaceGang(j)
	if !ok {
		return false
	}
	held := p.Index.ReservedOn()
	var take []Slot
	for _, sl := range shadow {
		i := p.View.byName[sl.Node]
		n := &p.View.nodes[i]
		room := n.gpus - held[sl.Node] - sl.GPUs // GPUs j leaves on the node once it runs
		if t := n.free - room; t > 0 {
			take = append(take, Slot{Node: sl.Node, GPUs: t})
		}
	}
	p.View.Take(take)
	return true
}

// Preemptive is the cycle shared by the baseline preemptive policies (srtf, tiresias,
// kueue); they differ only in the queue order, the victim order and who may preempt whom.
type Preemptive struct {
	// Queue holds the queued jobs in the order they are served.
	Queue []*Job
	// Candidates holds the running jobs that may be preempted, preferred victim first.
	Candidates []*Job
	// CanPreempt reports whether queued job q may preempt candidate v. For every q it must
	// hold for a prefix of Candidates (true, then false from some point on), so that the
	// eligible victims are found by binary search.
	CanPreempt func(q, v *Job) bool
	// Class, if set, is what CanPreempt(q, v) reads of q: jobs of the same class may preempt
	// the same candidates (a queue index, a priority). Run then finds each class's prefix
	// of Candidates once, not once per queued job.
	Class  func(q *Job) int
	Mode   SuspendMode
	Reason string
}

// Run schedules one cycle on plan p:
//
//  1. start the queued jobs whose reservations are free (AdmitReserved);
//  2. for each queued job in queue order: skip it if it is waiting for a reservation or
//     never fits; start it if it fits in free GPUs; otherwise take the prefix of
//     candidates it may preempt and, if a minimal set of them (FindVictims) makes room,
//     preempt those now and reserve the placement for the job;
//  3. stop as soon as no GPU is free and no candidate is left, since nothing more can
//     change in this cycle.
//
// A victim is chosen at most once per cycle and never among Suspending jobs, so jobs are
// not preempted twice. The cost is O(queue x (log candidates + placement)) plus the
// candidates scanned by victim searches.
func (c Preemptive) Run(p *Plan) Decisions {
	// 1. Reservations first.
	p.AdmitReserved()
	cands := slices.Clone(c.Candidates)
	cands = slices.DeleteFunc(cands, func(j *Job) bool { return j.Phase != Running || p.Preempted(j.ID) })
	// Victims leave cands lazily: taken marks them, and cands is compacted once a quarter
	// of it is taken, so removal costs O(candidates) in all, not per preemption.
	taken := make([]bool, len(cands))
	nTaken := 0
	// Within a cycle free GPUs only shrink and candidates only go, so a victim search that
	// failed for a shape (model, GPUs per worker, workers) with some eligible prefix fails
	// for any shape with as many workers or more and a prefix no longer: remember them.
	var failed []failure
	// prefix caches, per Class, the length of the prefix of cands that class may preempt.
	prefix := map[int]int{}
	eligible := func(q *Job) int {
		var k int
		if c.Class != nil {
			k = c.Class(q)
			if n, ok := prefix[k]; ok {
				return n
			}
		}
		n := sort.Search(len(cands), func(i int) bool { return !c.CanPreempt(q, cands[i]) })
		if c.Class != nil {
			prefix[k] = n
		}
		return n
	}
	// 2. Serve the queue.
	for _, q := range c.Queue {
		// 3. Nothing more can change.
		if len(cands) == nTaken && p.View.FreeGPUs("") == 0 {
			break
		}
		if p.Pending(q) {
			continue
		}
		if a := p.Admit(q); a != NoRoom {
			if a == Started && len(q.Reserved) > 0 {
				failed = nil // its unusable reservation's held GPUs went back to the pool
			}
			continue
		}
		n := eligible(q)
		if n == 0 || dominated(failed, q, n) {
			continue
		}
		victims, placement, ok := p.View.findVictims(q, cands[:n], taken)
		if !ok || len(victims) == 0 {
			failed = append(failed, failure{model: q.GPUModel, per: q.GPUsPerWorker, workers: q.Workers, prefix: n})
			continue
		}
		p.Preempt(q, victims, placement, c.Mode, c.Reason)
		for i := 0; i < n; i++ {
			if !taken[i] && slices.Contains(victims, cands[i]) {
				taken[i] = true
				nTaken++
			}
		}
		if nTaken > len(cands)/4 {
			cands = compact(cands, taken)
			taken, nTaken = make([]bool, len(cands)), 0
			failed = nil // prefixes are counted in the old positions
			clear(prefix)
		}
	}
	return p.Decisions()
}

// failure is a victim search that found no room.
type failure struct {
	model        string
	per, workers int32
	prefix       int
}

func dominated(failed []failure, q *Job, prefix int) bool {
	for _, f := range failed {
		if f.model == q.GPUModel && f.per == q.GPUsPerWorker && f.workers <= q.Workers && f.prefix >= prefix {
			return true
		}
	}
	return false
}

func compact(cands []*Job, taken []bool) []*Job {
	out := cands[:0]
	for i, j := range cands {
		if !taken[i] {
			out = append(out, j)
		}
	}
	return out
}
