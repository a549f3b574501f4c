package sjf

import (
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Name is the registered name of the policy.
const Name = "sjf"

// SJF serves queued jobs in ascending order of their true total service time
// (Job.Oracle.Service, known only in simulation; on a cluster, the run time the user declared,
// Job.UserEstimate; a job with neither sorts last, ties by arrival). It never preempts. It is greedy: every job that fits in the free GPUs
// starts, in that order, and a job that does not fit does not block shorter-ranked ones
// behind it. Jobs that never fit are skipped; reserved jobs start first.
type SJF struct {
	// scratch and queue are reused from cycle to cycle (sched.Scratch).
	scratch sched.Scratch
	queue   []*sched.Job
}

var _ sched.Policy = (*SJF)(nil)

// New returns an SJF policy.
func New() *SJF { return &SJF{} }

// Name returns "sjf".
func (*SJF) Name() string { return Name }

// service is the oracle service time, else the user's estimate, else the longest duration.
func service(j *sched.Job) time.Duration {
	switch {
	case j.Oracle.Known:
		return j.Oracle.Service
	case j.UserEstimate > 0:
		return j.UserEstimate
	}
	return time.Duration(1<<63 - 1)
}

// Schedule decides one cycle.
func (x *SJF) Schedule(s *sched.Snapshot) sched.Decisions {
	// 1. Plan; start what reservations hold.
	p := x.scratch.NewPlan(s)
	p.AdmitReserved()
	// 2. Queue by service time.
	x.queue = sched.SortInto(x.queue, p.Index.Queued, func(a, b *sched.Job) int {
		if c := compareDur(service(a), service(b)); c != 0 {
			return c
		}
		return sched.CompareArrival(a, b)
	})
	queue := x.queue
	// 3. Start whatever fits, until no GPU is free.
	for _, j := range queue {
		if p.View.FreeGPUs("") == 0 {
			break
		}
		if !p.Pending(j) {
			p.Admit(j)
		}
	}
	return p.Decisions()
}

func compareDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
