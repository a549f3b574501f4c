package pickyman

import (
	"cmp"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/profile"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Reasons of the resizes the policy decides.
const (
	// ReasonShrink: an elastic job gives up workers so that a waiting job can start.
	ReasonShrink = "Shrink"
	// ReasonGrow: an elastic job takes idle GPUs while nobody waits.
	ReasonGrow = "Grow"
)

// DefaultSerial is the serial fraction of an elastic job's epoch time the policy assumes
// when the model's profile has no trusted fit over at least two allocations: the epoch
// time at G GPUs is t(G0) x (Serial + (1 - Serial) x G0 / G) (Amdahl's law, the fit
// t(G) = a + b/G with a = Serial x t(G0)).
const DefaultSerial = 0.1

// anyElastic reports whether some running job may be shrunk (once per cycle).
func (c *cycle) anyElastic() bool {
	if c.opts.Rigid {
		return false
	}
	if c.hasElastic == 0 {
		c.hasElastic = -1
		for _, j := range c.plan.Index.Running {
			if j.Elastic() {
				c.hasElastic = 1
				break
			}
		}
	}
	return c.hasElastic > 0
}

// elastic reports whether the cycle may resize j.
func (c *cycle) elastic(j *sched.Job) bool { return !c.opts.Rigid && j.Elastic() }

// scaling is the factor by which j's remaining time changes when it runs on to workers
// instead of from workers: t(to x GPUsPerWorker) / t(from x GPUsPerWorker), from the
// model profile's fit when it is trusted over at least two allocations, else from
// DefaultSerial.
func (c *cycle) scaling(j *sched.Job, from, to int32) float64 {
	if from == to || from <= 0 || to <= 0 {
		return 1
	}
	if f := c.p.pred.Fit(j.Model); f.Trusted && f.DistinctGPUs >= 2 {
		a, b := f.At(from*j.GPUsPerWorker), f.At(to*j.GPUsPerWorker)
		if a > 0 && b > 0 {
			return float64(b) / float64(a)
		}
	}
	return profile.Amdahl(DefaultSerial, from, to)
}

// startSmaller starts elastic waiting job q on fewer workers than it asks for, down to its
// minimum, when that many fit in the free GPUs now and running smaller is predicted to end
// sooner than waiting for the full size: T_q x (t(k)/t(W) - 1) < the natural wait. The job
// grows later, when GPUs are idle (grow).
func (c *cycle) startSmaller(q waiting) bool {
	lo, _ := q.j.Sizes()
	if !c.elastic(q.j) || q.j.Workers <= lo {
		return false
	}
	if !c.built {
		c.build()
	}
	natural, freesUp := c.naturalWait(q.j)
	free := c.plan.View.FreeGPUs(q.j.GPUModel)
	for k := q.j.Workers - 1; k >= lo; k-- {
		if int64(k*q.j.GPUsPerWorker) > free {
			continue
		}
		slower := time.Duration(float64(q.rem) * (c.scaling(q.j, q.j.Workers, k) - 1))
		if freesUp && slower >= natural {
			return false // smaller sizes are slower still
		}
		if c.plan.AdmitSized(q.j, k) {
			return true
		}
	}
	return false
}

// shrinkCand is an elastic running job that may give up workers.
type shrinkCand struct {
	v *cand
	// keep is the placement the job keeps; removed counts the workers taken so far.
	keep    []sched.Slot
	removed int32
	// cost is the cost of shrinking it for the waiting job: the delay its slower run
	// inflicts on it while the waiting job runs, plus its resize overhead (checkpoint
	// write and restart), weighted like a preemption's.
	cost float64
}

// shrink looks for elastic running jobs that can give up workers (down to their minimum)
// so that waiting job q fits, and resizes them if it pays (the ordered division's test with
// shrink costs): candidates are taken in ascending cost per GPU they can give; each gives
// workers one at a time from the node where q is closest to fitting a worker, until q has a
// gang placement in the free and freed GPUs; a reverse pass gives back workers q does not
// need. A shrink costs its victim min(T_q, its own remaining time at the smaller size) x
// (1 - t(W)/t(W')) of delay plus its resize overhead; the group is resized only if the
// waiting time it saves q, the natural wait minus the time until the victims reach their
// boundary, exceeds Gain x the sum of the costs. It reports whether it resized.
func (c *cycle) shrink(q waiting) bool {
	if !c.built {
		c.build()
	}
	cs := c.shrinkCandidates(q)
	if len(cs) == 0 {
		return false
	}
	f := &freeing{view: c.plan.View, q: q.j, freed: map[string]int32{}}
	group, placement, ok := f.take(cs)
	if !ok {
		return false
	}
	placement = f.giveBack(group, placement)
	group = slices.DeleteFunc(group, func(sc *shrinkCand) bool { return sc.removed == 0 })
	if len(group) == 0 || !c.shrinkPays(q, group) {
		return false
	}
	resizes := make([]sched.Preemption, 0, len(group))
	for _, sc := range group {
		keep := slices.DeleteFunc(sc.keep, func(sl sched.Slot) bool { return sl.Workers == 0 })
		resizes = append(resizes, sched.Preemption{JobID: sc.v.j.ID, Reason: ReasonShrink, Resize: keep})
		sc.v.taken = true
		c.left--
		c.victims[sc.v.j] = true
	}
	c.plan.Resize(q.j, resizes, placement)
	return true
}

// shrinkCandidates are the elastic running jobs that may give workers to q (above their
// minimum, not resizing or ending, of no higher priority unless FlatPriority, of q's GPU
// model), in ascending cost per GPU they can give, at most MaxScan.
func (c *cycle) shrinkCandidates(q waiting) []*shrinkCand {
	tq := q.rem.Seconds()
	var cs []*shrinkCand
	for _, v := range c.cands {
		lo, _ := v.j.Sizes()
		if v.taken || v.finishing || !c.elastic(v.j) || v.j.Workers <= lo || v.j.Resizing() {
			continue
		}
		if !c.opts.FlatPriority && v.j.Priority > q.j.Priority || q.j.GPUModel != "" && v.model != q.j.GPUModel {
			continue
		}
		cs = append(cs, &shrinkCand{v: v, keep: slices.Clone(v.j.Placement), cost: c.shrinkCost(v, lo, tq)})
	}
	perGPU := func(sc *shrinkCand) float64 {
		lo, _ := sc.v.j.Sizes()
		return sc.cost / float64((sc.v.j.Workers-lo)*sc.v.j.GPUsPerWorker)
	}
	slices.SortFunc(cs, func(a, b *shrinkCand) int {
		if x := cmp.Compare(perGPU(a), perGPU(b)); x != 0 {
			return x
		}
		return cmp.Compare(a.v.j.ID, b.v.j.ID)
	})
	if len(cs) > c.opts.MaxScan {
		cs = cs[:c.opts.MaxScan]
	}
	return cs
}

// freeing is the state of a shrink search: the GPUs the candidates give, by node.
type freeing struct {
	view  *sched.View
	q     *sched.Job
	freed map[string]int32
}

// fits tries q on the free and freed GPUs.
func (f *freeing) fits() ([]sched.Slot, bool) {
	give := freedSlots(f.freed)
	f.view.Give(give)
	pl, ok := f.view.PlaceGang(f.q)
	f.view.Take(give)
	return pl, ok
}

// take has the candidates, in order, give workers one at a time, each from the node where
// q is closest to fitting one, until q has a gang placement; it returns the candidates that
// gave.
func (f *freeing) take(cs []*shrinkCand) (group []*shrinkCand, placement []sched.Slot, ok bool) {
	for _, sc := range cs {
		lo, _ := sc.v.j.Sizes()
		group = append(group, sc)
		for sc.v.j.Workers-sc.removed > lo && !ok {
			best, bestFree := -1, int32(-1)
			for i, sl := range sc.keep {
				if sl.Workers == 0 {
					continue
				}
				if free := f.view.Free(sl.Node) + f.freed[sl.Node]; free > bestFree {
					best, bestFree = i, free
				}
			}
			sl := &sc.keep[best]
			sl.Workers--
			sl.GPUs -= sc.v.j.GPUsPerWorker
			sc.removed++
			f.freed[sl.Node] += sc.v.j.GPUsPerWorker
			placement, ok = f.fits()
		}
		if ok {
			return group, placement, true
		}
	}
	return group, nil, false
}

// giveBack is the reverse pass: the workers q does not need go back, last victim first.
// It returns q's placement in what is still given.
func (f *freeing) giveBack(group []*shrinkCand, placement []sched.Slot) []sched.Slot {
	for i := len(group) - 1; i >= 0; i-- {
		sc := group[i]
		for k := range sc.keep {
			sl := &sc.keep[k]
			full := sched.GPUsOn(sc.v.j.Placement, sl.Node)
			for sl.GPUs < full {
				f.freed[sl.Node] -= sc.v.j.GPUsPerWorker
				if pl, ok := f.fits(); ok {
					placement = pl
					sl.Workers++
					sl.GPUs += sc.v.j.GPUsPerWorker
					sc.removed--
					continue
				}
				f.freed[sl.Node] += sc.v.j.GPUsPerWorker
				break
			}
		}
	}
	return placement
}

// shrinkPays is the benefit test at the sizes chosen: the waiting time the shrinks save q
// (its natural wait less the time until the victims reach their boundary) exceeds Gain x
// their costs; a job whose GPUs never free up without them always gains.
func (c *cycle) shrinkPays(q waiting, group []*shrinkCand) bool {
	tq := q.rem.Seconds()
	var costSum float64
	var groupDelay time.Duration
	for _, sc := range group {
		costSum += c.shrinkCost(sc.v, sc.v.j.Workers-sc.removed, tq)
		groupDelay = max(groupDelay, sc.v.est.BoundaryDelay())
	}
	natural, freesUp := c.expectedWait(q)
	if !freesUp {
		return true
	}
	saving := (natural - groupDelay).Seconds()
	return saving > 0 && saving > c.opts.Gain*costSum
}

// shrinkCost is the cost in seconds of shrinking candidate v to w workers for a waiting job
// of tq seconds: the delay its slower run inflicts on it while that job runs, min(T_q, its
// remaining time at w) x (1 - t(W)/t(w)), plus its resize overhead (checkpoint write and
// restart), weighted like a preemption's.
func (c *cycle) shrinkCost(v *cand, w int32, tq float64) float64 {
	s := c.scaling(v.j, v.j.Workers, w)
	delay := min(tq, time.Duration(float64(v.rem)*s).Seconds()) * (1 - 1/s)
	return delay + (1+c.opts.GPUCostWeight)*(v.est.Write+v.est.Resume).Seconds()
}

// freedSlots turns GPUs by node into slots (workers are not needed to give GPUs back to a
// view), in a stable order.
func freedSlots(freed map[string]int32) []sched.Slot {
	out := make([]sched.Slot, 0, len(freed))
	for n, g := range freed {
		if g > 0 {
			out = append(out, sched.Slot{Node: n, GPUs: g})
		}
	}
	slices.SortFunc(out, func(a, b sched.Slot) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// unserved records that waiting job q is left without GPUs in this cycle.
func (c *cycle) unserved(q *sched.Job) {
	if c.starved == nil {
		c.starved = map[string]bool{}
	}
	c.starved[q.GPUModel] = true
}

// mayGrow reports whether no waiting job left without GPUs could use the GPUs elastic job
// j would grow into: those of its model, or any GPU if it asks for none.
func (c *cycle) mayGrow(j *sched.Job) bool {
	if j.GPUModel == "" {
		return len(c.starved) == 0
	}
	return !c.starved[""] && !c.starved[j.GPUModel]
}

// grow lets elastic running jobs take idle GPUs that no waiting job left without GPUs could
// use (mayGrow): each job below its maximum size, longest predicted remaining time first,
// grows by as many workers as fit in the free GPUs, if the time it saves, rem x (1 - t(W')/t(W)), exceeds Gain x its resize
// overhead (checkpoint write and restart, weighted like a preemption's). Jobs warming up
// or within their protection after a (re)start are left alone, so a job is not resized
// again before it has run.
func (c *cycle) grow() {
	view := c.plan.View
	type growCand struct {
		j   *sched.Job
		rem time.Duration
	}
	var gs []growCand
	for _, j := range c.plan.Index.Running {
		_, hi := j.Sizes()
		if !c.elastic(j) || j.Workers >= hi || c.plan.Preempted(j.ID) || !c.mayGrow(j) {
			continue
		}
		if until := later(j.LastStart.Add(c.opts.Protect), j.WarmUntil); c.now.Before(until) {
			// A cycle must look again when the job may grow (see Policy.wake).
			if c.p.wake.IsZero() || until.Before(c.p.wake) {
				c.p.wake = until
			}
			continue
		}
		gs = append(gs, growCand{j, c.remaining(j)})
	}
	slices.SortFunc(gs, func(a, b growCand) int {
		if x := cmp.Compare(b.rem, a.rem); x != 0 {
			return x
		}
		return cmp.Compare(a.j.ID, b.j.ID)
	})
	for _, g := range gs {
		j := g.j
		free := view.FreeGPUs(j.GPUModel)
		_, hi := j.Sizes()
		add := min(hi-j.Workers, int32(free/int64(j.GPUsPerWorker)))
		if add <= 0 {
			continue
		}
		_, epoch := c.predict(j)
		est := c.p.ovh.Estimate(j, epoch, c.now)
		overheadSec := (1 + c.opts.GPUCostWeight) * (est.Write + est.Resume).Seconds()
		for ; add > 0; add-- {
			saved := g.rem.Seconds() * (1 - c.scaling(j, j.Workers, j.Workers+add))
			if saved <= c.opts.Gain*overheadSec {
				break
			}
			extra := *j
			extra.Workers, extra.MinWorkers, extra.MaxWorkers = add, 0, 0
			if pl, ok := view.PlaceGang(&extra); ok {
				target := mergeSlots(j.Placement, pl)
				c.plan.Resize(nil, []sched.Preemption{{JobID: j.ID, Reason: ReasonGrow, Resize: target}}, nil)
				break
			}
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// mergeSlots adds placement b to placement a, node by node.
func mergeSlots(a, b []sched.Slot) []sched.Slot {
	out := slices.Clone(a)
	for _, sl := range b {
		i := slices.IndexFunc(out, func(o sched.Slot) bool { return o.Node == sl.Node })
		if i < 0 {
			out = append(out, sl)
			continue
		}
		out[i].Workers += sl.Workers
		out[i].GPUs += sl.GPUs
	}
	return out
}
