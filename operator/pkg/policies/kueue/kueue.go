package kueue

import (
	"cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Name is the registered name of the policy.
const Name = "kueue"

// Reason is the preemption reason Kueue reports.
const Reason = "InClusterQueue"

// Kueue serves queued jobs by priority (highest first), then by submit time. A job that
// does not fit in the free GPUs may preempt only running jobs of strictly lower priority,
// as Kueue does with withinClusterQueue: LowerPriority. Candidates are ordered lowest
// priority first and, within a priority, most recently admitted first (latest
// Job.LastStart), so that the least work is disturbed; they are taken in that order until
// the job fits, then every victim the job can do without is dropped, last-but-one first
// (sched.View.FindVictims), which leaves a minimal set. Victims are suspended now
// (Kueue evicts the workload) and the GPUs they free are reserved for the job. Costs of
// suspending are ignored. Suspending jobs are never preempted again; jobs that never fit
// are skipped.
type Kueue struct {
	// scratch, queue and cands are reused from cycle to cycle (sched.Scratch).
	scratch      sched.Scratch
	queue, cands []*sched.Job
}

var _ sched.Policy = (*Kueue)(nil)

// New returns a Kueue policy.
func New() *Kueue { return &Kueue{} }

// Name returns "kueue".
func (*Kueue) Name() string { return Name }

// Schedule decides one cycle.
func (x *Kueue) Schedule(s *sched.Snapshot) sched.Decisions {
	// 1. Plan on the snapshot.
	p := x.scratch.NewPlan(s)
	// 2. Queue: priority, then arrival.
	x.queue = sched.SortInto(x.queue, p.Index.Queued, func(a, b *sched.Job) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return sched.CompareArrival(a, b)
	})
	queue := x.queue
	// 3. Victims: lowest priority, then most recently admitted, then ID.
	x.cands = sched.SortInto(x.cands, p.Index.Running, func(a, b *sched.Job) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		if c := b.LastStart.Compare(a.LastStart); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	cands := x.cands
	// 4. Start, preempting strictly lower priorities.
	return sched.Preemptive{
		Queue:      queue,
		Candidates: cands,
		CanPreempt: func(q, v *sched.Job) bool { return v.Priority < q.Priority },
		Class:      func(q *sched.Job) int { return int(q.Priority) },
		Mode:       sched.SuspendNow,
		Reason:     Reason,
	}.Run(p)
}
