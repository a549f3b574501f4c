package fifo

import "github.com/pickyman/pickyman/operator/pkg/sched"

// Name is the registered name of the policy.
const Name = "fifo"

// Options configure FIFO.
type Options struct {
	// Backfill lets later jobs start when the head of the queue is blocked, in GPUs the
	// head does not need (see FIFO).
	Backfill bool
}

// FIFO starts queued jobs in pure arrival order (submit time, then ID); priority is
// ignored. It never preempts. Without backfill the first job that does not fit blocks
// every job behind it. With backfill (EASY-style), the blocked head gets a shadow
// placement: where it would run once the jobs running now end. Run times are unknown to
// FIFO, so it cannot compute the head's start time as EASY does; instead it is
// conservative: a later job may start only in GPUs the head's shadow placement leaves
// over, so no backfilled job, however long, can delay the head (sched.Plan.Shadow).
//
// Jobs that never fit the cluster are skipped, not allowed to block the queue; a queued
// job with a reservation starts there as soon as its GPUs are free and, until then,
// blocks the queue like any head.
type FIFO struct {
	opts Options
	// scratch and queue are reused from cycle to cycle (sched.Scratch).
	scratch sched.Scratch
	queue   []*sched.Job
}

var _ sched.Policy = (*FIFO)(nil)

// New returns a FIFO policy.
func New(opts Options) *FIFO { return &FIFO{opts: opts} }

// Name returns "fifo".
func (f *FIFO) Name() string { return Name }

// Schedule decides one cycle.
func (f *FIFO) Schedule(s *sched.Snapshot) sched.Decisions {
	// 1. Plan on the snapshot; the queue in arrival order.
	p := f.scratch.NewPlan(s)
	f.queue = sched.SortInto(f.queue, p.Index.Queued, sched.CompareArrival)
	queue := f.queue
	// 2. Start jobs in order until one blocks.
	for i, j := range queue {
		switch p.Admit(j) {
		case sched.Started, sched.Never:
			continue
		case sched.NoRoom:
			if f.opts.Backfill {
				p.Shadow(j)
			}
		}
		if !f.opts.Backfill {
			break
		}
		// 3. Backfill the rest into what the head leaves over.
		for _, k := range queue[i+1:] {
			if p.View.FreeGPUs("") == 0 {
				break
			}
			if !p.Pending(k) {
				p.Admit(k)
			}
		}
		break
	}
	return p.Decisions()
}
