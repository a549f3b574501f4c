package pickyman

import (
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// divide looks for the victim group V_i of waiting job q among the running jobs not yet
// assigned, and preempts it if it pays (docs/policy.md, ordered division):
//
//   - a victim v costs cost_v = T_q + waste_v: the waiting job's remaining time T_q,
//     during which v is suspended, plus v's own overhead (resume; checkpoint write or lost
//     work and grace period), weighted for the GPU time it wastes; a victim whose boundary
//     suspend is its end costs nothing;
//   - victims are taken in ascending cost per freed GPU, cost_v / G_v, until the free GPUs
//     and the freed ones make a gang placement for q; then every victim q does not need is
//     dropped (reverse pass, sched.View.FindVictims);
//   - the search looks at the MaxScan cheapest candidates at most, which bounds its work;
//   - the group is preempted only if the waiting time it saves q, the natural wait minus
//     the time until the victims' GPUs are free (max s_v), exceeds Gain x the sum of the
//     victims' costs;
//   - with QueueWait the natural wait also counts the waiting jobs ahead of q (queueWait),
//     and only jobs predicted to run more than queueVictimMargin x T_q (or ending at their
//     boundary) are candidates.
//
// It reports whether it preempted.
//
// Within a class of candidates with the same GPU count the cost order is the same for
// every q (T_q is common to all), so each class is ordered once per cycle (lazily: only
// as far as the searches read it) and each q merges the classes: a search costs
// O(victims scanned x classes), not a sort of all running jobs.
func (c *cycle) divide(q waiting) bool {
	if !c.built {
		c.build()
	}
	if len(c.cands) == 0 {
		return false
	}
	tq := q.rem.Seconds()
	model := q.j.GPUModel
	eligible := func(v *cand) bool {
		if c.opts.QueueWait && !v.finishing && float64(v.rem) <= queueVictimMargin*float64(q.rem) {
			return false
		}
		return !v.taken && (c.opts.FlatPriority || v.j.Priority <= q.j.Priority) && (model == "" || v.model == model)
	}
	key := func(v *cand) float64 {
		if v.finishing {
			return 0
		}
		return (tq + v.waste) / float64(v.gpus)
	}
	heads := make([]int, len(c.classes))
	next := func() *cand {
		best := -1
		var bestKey float64
		var bestV *cand
		for ci := range c.classes {
			cl := &c.classes[ci]
			v, ok := cl.at(heads[ci])
			for ok && !eligible(v) {
				heads[ci]++
				v, ok = cl.at(heads[ci])
			}
			if !ok {
				continue
			}
			if k := key(v); best < 0 || k < bestKey {
				best, bestKey, bestV = ci, k, v
			}
		}
		if best < 0 {
			return nil
		}
		heads[best]++
		return bestV
	}
	// Take an ordered prefix, grow it until the victim search succeeds or nothing is left.
	order := c.scratch[:0]
	var picked []*cand // picked[i] is the candidate of order[i]
	var victims []*sched.Job
	var placement []sched.Slot
	ok := false
	for limit := 64; limit <= c.opts.MaxScan*4; limit *= 4 {
		limit = min(limit, c.opts.MaxScan)
		exhausted := false
		for len(order) < limit {
			v := next()
			if v == nil {
				exhausted = true
				break
			}
			order = append(order, v.j)
			picked = append(picked, v)
		}
		victims, placement, ok = c.plan.View.FindVictims(q.j, order)
		if ok || exhausted || limit == c.opts.MaxScan {
			break
		}
	}
	c.scratch = order
	if !ok || len(victims) == 0 {
		return false
	}
	// Victims come back in candidate order: map them to their entries.
	group := make([]*cand, 0, len(victims))
	for i, k := 0, 0; i < len(order) && k < len(victims); i++ {
		if order[i] == victims[k] {
			group = append(group, picked[i])
			k++
		}
	}
	// Benefit test.
	var costSum float64
	var groupDelay time.Duration
	for _, v := range group {
		if !v.finishing {
			costSum += tq + v.waste
		}
		if v.delay > groupDelay {
			groupDelay = v.delay
		}
	}
	natural, freesUp := c.naturalWait(q.j)
	if freesUp && c.opts.QueueWait {
		if w, ok := c.queueWait(q.j); !ok {
			freesUp = false
		} else if w > natural {
			natural = w
		}
	}
	if freesUp {
		saving := (natural - groupDelay).Seconds()
		if saving <= 0 || saving <= c.opts.Gain*costSum {
			return false
		}
	}
	c.plan.Preempt(q.j, victims, placement, sched.SuspendBoundary, Reason)
	for _, v := range group {
		v.taken = true
		c.left--
		c.chosen[v.j.ID] = v
		c.victims[v.j] = true
	}
	return true
}
