package pickyman

import (
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// queueVictimMargin is how many times T_q a victim's predicted remaining time must exceed
// under QueueWait: a waiting job's T_q is often a prior, and the margin keeps an
// underestimated T_q from suspending a job that would have ended first.
const queueVictimMargin = 2

// freed lists the running jobs' GPUs of one GPU model ("" for all) in predicted end order,
// as cumulative counts, read lazily from cycle.byEnd.
type freed struct {
	end []time.Duration
	cum []int64
	// next is the position in byEnd to read next.
	next int
}

// queueWait estimates how long q would wait without preemption behind the waiting jobs
// ahead of it in this cycle's order that found neither free GPUs nor victims (their GPUs,
// of the models q can use, are in cycle.ahead): until the running jobs, ending in predicted
// order, have freed those GPUs and q's own beyond the GPUs free now. It counts GPUs and
// ignores gang shapes (naturalWait covers those), so it is the time q's turn comes in a
// first-come list of the GPUs as they are freed.
func (c *cycle) queueWait(q *sched.Job) (time.Duration, bool) {
	m := q.GPUModel
	ahead := c.ahead[""]
	if m == "" {
		for k, g := range c.ahead {
			if k != "" {
				ahead += g
			}
		}
	} else {
		ahead += c.ahead[m]
	}
	return c.freedAt(m, ahead+int64(q.GPUs())-c.plan.View.FreeGPUs(m))
}

// freedAt returns the predicted end of the running job (not a victim) with which the
// running jobs on nodes of GPU model m ("" for all) have freed need GPUs. Beyond the last
// running job it extrapolates at their average rate; ok is false only if no running job
// frees a GPU of model m.
func (c *cycle) freedAt(m string, need int64) (time.Duration, bool) {
	if need <= 0 {
		return 0, true
	}
	if c.freed == nil {
		c.freed = map[string]*freed{}
	}
	f := c.freed[m]
	if f == nil {
		f = &freed{}
		c.freed[m] = f
	}
	for len(f.cum) == 0 || f.cum[len(f.cum)-1] < need {
		e, ok := c.byEnd.at(f.next)
		if !ok {
			if n := len(f.cum); n > 0 && f.cum[n-1] > 0 {
				return time.Duration(float64(f.end[n-1]) * float64(need) / float64(f.cum[n-1])), true
			}
			return 0, false
		}
		f.next++
		if c.victims[e.j] || len(e.at) == 0 {
			continue
		}
		if m != "" {
			i, ok := c.buf.nodes.index[e.at[0].Node]
			if !ok || c.buf.nodes.models[i] != m {
				continue
			}
		}
		var last int64
		if n := len(f.cum); n > 0 {
			last = f.cum[n-1]
		}
		f.end = append(f.end, e.end)
		f.cum = append(f.cum, last+int64(e.j.GPUs()))
	}
	// The first end at which the cumulative count reaches need.
	lo, hi := 0, len(f.cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if f.cum[mid] >= need {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return f.end[lo], true
}
