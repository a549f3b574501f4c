package srtf

import (
	"cmp"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Name is the registered name of the policy.
const Name = "srtf"

// Reason is the preemption reason SRTF reports.
const Reason = "ShorterRemaining"

// SRTF serves queued jobs in ascending order of their true remaining run time
// (Job.Oracle.Remaining, known only in simulation; on a cluster, the run time the user
// declared, Job.UserEstimate, less the time the job has run, its attained GPU time over its
// GPUs; a job with neither sorts last; ties by arrival). A job that does not fit in the free GPUs may preempt running jobs whose
// remaining time is strictly longer than its own: candidates are taken longest remaining
// first until the job fits, then unneeded ones are dropped (a minimal set,
// sched.View.FindVictims). Victims are suspended now, paying the lost work that SRTF
// ignores, and the GPUs they free are reserved for the job. Suspending jobs are never
// preempted again; jobs that never fit are skipped.
type SRTF struct {
	// scratch, queue and cands are reused from cycle to cycle (sched.Scratch).
	scratch      sched.Scratch
	queue, cands []*sched.Job
}

var _ sched.Policy = (*SRTF)(nil)

// New returns an SRTF policy.
func New() *SRTF { return &SRTF{} }

// Name returns "srtf".
func (*SRTF) Name() string { return Name }

func remaining(j *sched.Job) time.Duration {
	switch {
	case j.Oracle.Known:
		return j.Oracle.Remaining
	case j.UserEstimate > 0:
		ran := time.Duration(0)
		if g := j.GPUs(); g > 0 {
			ran = j.Attained / time.Duration(g)
		}
		return max(0, j.UserEstimate-ran)
	}
	return time.Duration(1<<63 - 1)
}

// Schedule decides one cycle.
func (x *SRTF) Schedule(s *sched.Snapshot) sched.Decisions {
	// 1. Plan on the snapshot.
	p := x.scratch.NewPlan(s)
	// 2. Queue: shortest remaining first.
	x.queue = sched.SortInto(x.queue, p.Index.Queued, func(a, b *sched.Job) int {
		if c := cmp.Compare(remaining(a), remaining(b)); c != 0 {
			return c
		}
		return sched.CompareArrival(a, b)
	})
	queue := x.queue
	// 3. Victims: longest remaining first, then most recently started, then ID.
	x.cands = sched.SortInto(x.cands, p.Index.Running, func(a, b *sched.Job) int {
		if c := cmp.Compare(remaining(b), remaining(a)); c != 0 {
			return c
		}
		if c := b.LastStart.Compare(a.LastStart); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	cands := x.cands
	// 4. Start, preempting longer jobs for shorter ones.
	return sched.Preemptive{
		Queue:      queue,
		Candidates: cands,
		CanPreempt: func(q, v *sched.Job) bool { return remaining(v) > remaining(q) },
		Mode:       sched.SuspendNow,
		Reason:     Reason,
	}.Run(p)
}
