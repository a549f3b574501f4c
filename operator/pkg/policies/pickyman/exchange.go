package pickyman

import (
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// The exchange test (Options.Exchange; docs/policy.md, "Why SRTF waits less").
//
// The benefit test compares the wait a preemption saves the waiting job q, its natural
// wait, with the delay it inflicts on the victims. That is right when nobody waits behind
// q: the GPUs that free up at the natural wait would otherwise go to q, and q starting
// earlier is all there is to gain. When the queue behind q asks for more GPUs than are
// free, those GPUs go to the next waiting job instead, and so on down the queue: every job
// behind q starts one turn earlier, and the preemption is an exchange of q's run with the
// victims' remaining runs. Exchanging two adjacent jobs of a busy server lowers the sum of
// waiting times by the longer remaining time less the shorter (the argument behind
// shortest-remaining-time-first), so under a backlog a group also pays when its shortest
// predicted remaining time, less the time until its GPUs are free, exceeds Gain x the
// victims' costs (T_q plus each victim's overhead, as in the benefit test). Victims are
// then only those predicted to run longer than Exchange x T_q plus their overhead and
// suspend delay (or that end at their boundary), so that the cheapest group found is one
// the exchange can pay for. A margin above 1 allows for T_q's error: before a job has run,
// T_q is mostly the queue's median run time, and run times are heavy-tailed, so a job
// predicted at the median runs much longer on average.

// addDemand counts the GPUs of a waiting job in c.demand (per GPU model, "" for jobs that
// take any); sign -1 takes a job out once the cycle's loop has reached it, so that during
// its victim search the demand is the queue behind it.
func (c *cycle) addDemand(j *sched.Job, sign int64) {
	if c.opts.Exchange <= 0 {
		return
	}
	if c.demand == nil {
		c.demand = map[string]int64{}
	}
	c.demand[j.GPUModel] += sign * int64(j.GPUs())
}

// backlogged reports whether the waiting jobs behind q in this cycle's order ask for more
// GPUs that q could use than are free now: the GPUs q leaves to others would not idle.
func (c *cycle) backlogged(q *sched.Job) bool {
	if c.opts.Exchange <= 0 {
		return false
	}
	var behind int64
	if q.GPUModel == "" {
		for _, g := range c.demand {
			behind += g
		}
	} else {
		behind = c.demand[q.GPUModel] + c.demand[""]
	}
	return behind > c.plan.View.FreeGPUs(q.GPUModel)
}

// exchangeEligible reports whether v may be a victim of q under the exchange test: it ends
// at its boundary, or it is predicted to run longer than Exchange x T_q plus its overhead
// and suspend delay.
func (c *cycle) exchangeEligible(v *cand, tq time.Duration) bool {
	return v.finishing || v.rem-v.delay > time.Duration(c.opts.Exchange*float64(tq))+time.Duration(v.waste*float64(time.Second))
}

// exchangePays is the exchange test for group: the shortest predicted remaining time of a
// victim that does not end at its boundary, less groupDelay, exceeds Gain x costSum.
func (c *cycle) exchangePays(group []*cand, groupDelay time.Duration, costSum float64) bool {
	shortest := time.Duration(-1)
	for _, v := range group {
		if !v.finishing && (shortest < 0 || v.rem < shortest) {
			shortest = v.rem
		}
	}
	if shortest < 0 {
		return false
	}
	saving := (shortest - groupDelay).Seconds()
	return saving > 0 && saving > c.opts.Gain*costSum
}
