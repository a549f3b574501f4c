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
	c.noGroup = false
	if !c.built {
		c.build()
	}
	if len(c.cands) == 0 {
		c.noGroup = true
		return false
	}
	finishingOnly := c.onlyFinishingPays(q)
	// Confined, the search fails without candidates that end at their boundary, when even all
	// of them free too few GPUs, or when a like search failed earlier in the cycle.
	if finishingOnly && (!c.hasFinishing || c.freeFor(q.j)+c.finishingGPUs < int64(q.j.GPUs()) || c.finishingFailed(q.j)) {
		return false
	}
	order, picked, victims, placement, ok, exhausted := c.searchVictims(q, finishingOnly)
	if !ok || len(victims) == 0 {
		c.noGroup = !finishingOnly && !ok
		if finishingOnly && !ok && exhausted {
			c.failed = append(c.failed, failure{model: q.j.GPUModel, per: q.j.GPUsPerWorker, workers: q.j.Workers, priority: q.j.Priority})
		}
		return false
	}
	group := victimGroup(order, picked, victims)
	if !c.pays(q, group) {
		return false
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

// onlyFinishingPays reports whether only a group of victims that all end at their boundary
// (cost 0) could pass the benefit test for q, so that the victim search can be confined to
// them: every other victim costs at least T_q, and q's natural wait, which bounds the
// saving, is no more than Gain x T_q. Most waiting jobs of an overloaded cluster are in this
// case (their natural wait is shorter than their own run time), and the confined search
// decides exactly as the full one would: the candidates that end at their boundary come
// first in the cost order, and the victim search keeps the last candidate it took, so a
// full search that needed another candidate returns a group that does not pay. One thing
// moves: the natural wait is now computed, and cached for q's gang shape (naturalWait), at
// the first search of that shape in the cycle rather than at the first one that found a
// group; a cached wait is an underestimate either way (see naturalWait). With QueueWait the
// natural wait also depends on the victims chosen later in the cycle, so the search is
// never confined.
func (c *cycle) onlyFinishingPays(q waiting) bool {
	if c.opts.QueueWait || c.backlogged(q.j) {
		return false
	}
	natural, freesUp := c.expectedWait(q)
	return freesUp && natural.Seconds() <= c.opts.Gain*q.rem.Seconds()
}

// failure is a victim search among the candidates that end at their boundary that found
// no placement with every eligible one of them.
type failure struct {
	model        string
	per, workers int32
	priority     int32
}

// finishingFailed reports whether a search among the candidates that end at their
// boundary must fail for q because one failed earlier in the cycle for a job of q's GPU
// model and worker size, as many workers or fewer, and a priority as high or higher (so
// that q's eligible candidates are among its): within a cycle free GPUs only go (c.failed
// is cleared when a start gives held GPUs back) and candidates are only taken.
func (c *cycle) finishingFailed(q *sched.Job) bool {
	for _, f := range c.failed {
		if f.model == q.GPUModel && f.per == q.GPUsPerWorker && f.workers <= q.Workers && (c.opts.FlatPriority || q.Priority <= f.priority) {
			return true
		}
	}
	return false
}

// candidates yields the candidates eligible as victims of q in ascending cost per freed GPU,
// merging the cycle's classes (each ordered once per cycle, lazily).
type candidates struct {
	c     *cycle
	q     waiting
	tq    float64
	heads []int
	// exchange: q's queue is backlogged and Exchange is on (exchangeEligible).
	exchange bool
}

// candidatesFor returns the candidates for q; with finishingOnly, only those whose boundary
// suspend is their end (the first class, c.hasFinishing).
func (c *cycle) candidatesFor(q waiting, finishingOnly bool) *candidates {
	classes := len(c.classes)
	if finishingOnly {
		classes = 1
	}
	return &candidates{c: c, q: q, tq: q.rem.Seconds(), heads: make([]int, classes), exchange: c.backlogged(q.j)}
}

// eligible: not taken, of no higher priority than q (unless FlatPriority), of q's GPU model;
// with QueueWait, predicted to run more than queueVictimMargin x T_q or ending at its
// boundary.
func (it *candidates) eligible(v *cand) bool {
	c, q := it.c, it.q
	if c.opts.QueueWait && !v.finishing && float64(v.rem) <= queueVictimMargin*float64(q.rem) {
		return false
	}
	if it.exchange && !c.exchangeEligible(v, q.rem) {
		return false
	}
	return !v.taken && (c.opts.FlatPriority || v.j.Priority <= q.j.Priority) && (q.j.GPUModel == "" || v.model == q.j.GPUModel)
}

// key is a victim's cost per freed GPU, (T_q + waste_v) / G_v; 0 for one ending at its
// boundary.
func (it *candidates) key(v *cand) float64 {
	if v.finishing {
		return 0
	}
	return (it.tq + v.waste) / float64(v.gpus)
}

// next returns the cheapest eligible candidate left, or nil.
func (it *candidates) next() *cand {
	best := -1
	var bestKey float64
	var bestV *cand
	for ci := range it.heads {
		cl := &it.c.classes[ci]
		v, ok := cl.at(it.heads[ci])
		for ok && !it.eligible(v) {
			it.heads[ci]++
			v, ok = cl.at(it.heads[ci])
		}
		if !ok {
			continue
		}
		if k := it.key(v); best < 0 || k < bestKey {
			best, bestKey, bestV = ci, k, v
		}
	}
	if best < 0 {
		return nil
	}
	it.heads[best]++
	return bestV
}

// searchVictims takes an ordered prefix of the candidates (with finishingOnly, of those
// that end at their boundary) and grows it (64, 256, ... up to MaxScan) until the victim
// search finds a placement for q or nothing is left. picked[i] is the candidate of
// order[i]; exhausted reports that the search saw every eligible candidate.
func (c *cycle) searchVictims(q waiting, finishingOnly bool) (order []*sched.Job, picked []*cand, victims []*sched.Job, placement []sched.Slot, ok, exhausted bool) {
	it := c.candidatesFor(q, finishingOnly)
	order = c.scratch[:0]
	for limit := 64; limit <= c.opts.MaxScan*4; limit *= 4 {
		limit = min(limit, c.opts.MaxScan)
		exhausted = false
		for len(order) < limit {
			v := it.next()
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
	return order, picked, victims, placement, ok, exhausted
}

// victimGroup maps the victims, which come back in candidate order, to their candidates.
func victimGroup(order []*sched.Job, picked []*cand, victims []*sched.Job) []*cand {
	group := make([]*cand, 0, len(victims))
	for i, k := 0, 0; i < len(order) && k < len(victims); i++ {
		if order[i] == victims[k] {
			group = append(group, picked[i])
			k++
		}
	}
	return group
}

// pays is the benefit test: preempting group pays when the waiting time it saves q (its
// natural wait, with QueueWait at least the queue's ahead of it, less the time until the
// victims' GPUs are free) exceeds Gain x the victims' costs. A job whose GPUs never free up
// without preemption always gains.
func (c *cycle) pays(q waiting, group []*cand) bool {
	tq := q.rem.Seconds()
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
	if c.backlogged(q.j) && c.exchangePays(group, groupDelay, costSum) {
		return true
	}
	natural, freesUp := c.expectedWait(q)
	if freesUp && c.opts.QueueWait {
		if w, ok := c.queueWait(q.j); !ok {
			freesUp = false
		} else if w > natural {
			natural = w
		}
	}
	if !freesUp {
		return true
	}
	saving := (natural - groupDelay).Seconds()
	return saving > 0 && saving > c.opts.Gain*costSum
}
