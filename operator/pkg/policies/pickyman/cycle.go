package pickyman

import (
	"cmp"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/predictor"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// cycle is the scratch state of one Schedule call.
type cycle struct {
	p    *Policy
	opts Options
	now  time.Time
	s    *sched.Snapshot
	plan *sched.Plan

	nodeModel map[string]string
	// cands holds the running jobs that may be victims at all (not protected by recency or
	// budget), built on the first victim search; classes splits them by cost class.
	cands   []*cand
	classes [][]*cand
	built   bool
	// left counts the candidates not chosen yet.
	left int
	// chosen maps victim IDs to their candidate entry.
	chosen map[string]*cand
	// byEnd lists the running jobs not chosen as victims by predicted end, for the
	// natural-wait estimate; stale after each preemption.
	// run holds every running job with its predicted remaining time; byEnd is it sorted
	// by that time, for the natural-wait estimate.
	run   []ending
	byEnd []ending
	// victims holds the jobs chosen as victims in this cycle.
	victims   map[*sched.Job]bool
	nodeIndex map[string]int
	// natural caches naturalWait by gang shape for the cycle.
	natural map[shape]waitResult
	scratch []*sched.Job
}

// ending is a running job and its predicted remaining time.
type ending struct {
	j   *sched.Job
	end time.Duration
}

// cand is a running job as a potential victim.
type cand struct {
	j     *sched.Job
	gpus  int32
	model string
	rem   time.Duration
	est   overhead.Estimate
	mode  sched.SuspendMode
	// delay is s_v: decision to GPUs free in mode.
	delay time.Duration
	// finishing: a boundary suspend is the job's end; the victim loses nothing.
	finishing bool
	// waste is the victim's overhead in seconds, apart from the waiting job's run time:
	// resume plus checkpoint write (boundary) or lost work plus grace (now), weighted by
	// 1 + GPUCostWeight.
	waste float64
	taken bool
}

func (p *Policy) newCycle(s *sched.Snapshot, plan *sched.Plan) *cycle {
	return &cycle{p: p, opts: p.opts, now: s.Now, s: s, plan: plan, chosen: map[string]*cand{}, victims: map[*sched.Job]bool{}}
}

// remaining is the predicted remaining run time of j (T_q for a waiting job), including
// the rest of its warm-up if it is warming up. A job nothing is known about gets Unknown
// plus the time it has run, so such jobs are served least attained service first.
func (c *cycle) remaining(j *sched.Job) time.Duration {
	rem, _ := c.predict(j)
	return rem
}

// predict returns remaining (see above) and the epoch time the overhead model uses for j,
// from one prediction.
func (c *cycle) predict(j *sched.Job) (rem, epoch time.Duration) {
	oracle := c.opts.Variant == Oracle && j.Oracle.Known
	var pr predictor.Prediction
	if !oracle || j.EpochTime == 0 {
		pr = c.p.pred.Predict(j)
	}
	switch {
	case oracle:
		rem = j.Oracle.Remaining
		epoch = j.EpochTime
		if epoch == 0 && j.Epochs > 0 {
			epoch = j.Oracle.Service / time.Duration(j.Epochs)
		}
	case pr.Known():
		rem, epoch = pr.Remaining, pr.EpochTime
	default:
		rem, epoch = c.opts.Unknown+ranFor(j), pr.EpochTime
	}
	if j.Phase != sched.Queued && c.now.Before(j.WarmUntil) {
		rem += j.WarmUntil.Sub(c.now)
	}
	return rem, epoch
}

// build computes the candidates: every running job not protected by recency or budget,
// with its suspend mode, delay and overhead, split into cost classes whose members are in
// the same order for every waiting job (see divide).
func (c *cycle) build() {
	c.built = true
	c.nodeModel = make(map[string]string, len(c.s.Nodes))
	c.nodeIndex = make(map[string]int, len(c.s.Nodes))
	for i := range c.s.Nodes {
		c.nodeModel[c.s.Nodes[i].Name] = c.s.Nodes[i].GPUModel
		c.nodeIndex[c.s.Nodes[i].Name] = i
	}
	byGPUs := map[int32][]*cand{}
	var finishing []*cand
	c.run = make([]ending, 0, len(c.plan.Index.Running))
	store := make([]cand, 0, len(c.plan.Index.Running)) // one allocation for all candidates
	for _, j := range c.plan.Index.Running {
		rem, epoch := c.predict(j)
		c.run = append(c.run, ending{j, rem})
		if c.plan.Preempted(j.ID) || c.now.Sub(j.LastStart) < c.opts.Protect || j.Preemptions >= c.opts.Budget {
			continue
		}
		store = append(store, cand{j: j, gpus: j.GPUs(), rem: rem})
		v := &store[len(store)-1]
		if len(j.Placement) > 0 {
			v.model = c.nodeModel[j.Placement[0].Node]
		}
		v.est = c.p.ovh.Estimate(j, epoch, c.now)
		switch c.opts.Variant {
		case Blind:
			v.mode = sched.SuspendNow
			v.delay = 0
		case Now:
			v.mode = sched.SuspendNow
		default:
			v.mode = v.est.Choose()
		}
		if c.opts.Variant != Blind {
			v.delay = v.est.Delay(v.mode)
			switch {
			case v.mode == sched.SuspendBoundary && v.est.Finishes && !v.est.AtCheckpoint:
				v.finishing = true
			case v.mode == sched.SuspendBoundary:
				w := v.est.Resume
				if !v.est.AtCheckpoint {
					w += v.est.Write
				}
				v.waste = (1 + c.opts.GPUCostWeight) * w.Seconds()
			default:
				v.waste = (1 + c.opts.GPUCostWeight) * (v.est.Resume + v.est.Lost(v.mode) + v.est.Grace).Seconds()
			}
		}
		c.cands = append(c.cands, v)
		c.left++
		if v.finishing {
			finishing = append(finishing, v)
		} else {
			byGPUs[v.gpus] = append(byGPUs[v.gpus], v)
		}
	}
	byWaste := func(a, b *cand) int {
		if x := cmp.Compare(a.waste, b.waste); x != 0 {
			return x
		}
		if x := cmp.Compare(b.rem, a.rem); x != 0 { // longer remaining first
			return x
		}
		return cmp.Compare(a.j.ID, b.j.ID)
	}
	if len(finishing) > 0 {
		slices.SortFunc(finishing, func(a, b *cand) int {
			if x := cmp.Compare(a.delay, b.delay); x != 0 {
				return x
			}
			return cmp.Compare(a.j.ID, b.j.ID)
		})
		c.classes = append(c.classes, finishing)
	}
	sizes := make([]int32, 0, len(byGPUs))
	for g := range byGPUs {
		sizes = append(sizes, g)
	}
	slices.Sort(sizes)
	for _, g := range sizes {
		cl := byGPUs[g]
		slices.SortFunc(cl, byWaste)
		c.classes = append(c.classes, cl)
	}
}

// naturalWait estimates how long q would wait without preemption: until the running jobs
// not chosen as victims, ending in predicted order, free enough GPUs for a placement. It
// ignores the other waiting jobs (which would take some of those GPUs first), so it
// underestimates the wait and the saving, and errs towards not preempting. ok is false
// if the running jobs never free enough GPUs. The running jobs are sorted by predicted
// end once per cycle; the scan tracks worker capacity per GPU model incrementally, so it
// costs O(nodes + jobs scanned). The result is cached per gang shape for the whole cycle:
// after a preemption the GPUs of its victims are promised to an earlier waiting job, so the
// cached wait of a later one is an underestimate, which again errs towards not preempting.
func (c *cycle) naturalWait(q *sched.Job) (time.Duration, bool) {
	k := shape{q.Workers, q.GPUsPerWorker, q.GPUModel}
	if r, ok := c.natural[k]; ok {
		return r.wait, r.ok
	}
	w, ok := c.computeNaturalWait(q)
	if c.natural == nil {
		c.natural = map[shape]waitResult{}
	}
	c.natural[k] = waitResult{w, ok}
	return w, ok
}

// shape is a gang shape: what a victim search depends on besides the view.
type shape struct {
	workers, per int32
	model        string
}

type waitResult struct {
	wait time.Duration
	ok   bool
}

func (c *cycle) computeNaturalWait(q *sched.Job) (time.Duration, bool) {
	if c.byEnd == nil {
		c.byEnd = slices.Clone(c.run)
		slices.SortFunc(c.byEnd, func(a, b ending) int {
			if x := cmp.Compare(a.end, b.end); x != 0 {
				return x
			}
			return cmp.Compare(a.j.ID, b.j.ID)
		})
	}
	per := q.GPUsPerWorker
	if per <= 0 {
		return 0, false
	}
	// Worker capacity per GPU model of the free GPUs, then of the GPUs freed as jobs end.
	caps := map[string]int64{}
	eligible := func(i int) bool {
		n := &c.s.Nodes[i]
		return !n.Unschedulable && (q.GPUModel == "" || n.GPUModel == q.GPUModel)
	}
	free := make(map[int]int32)
	cur := func(i int) int32 {
		if f, ok := free[i]; ok {
			return f
		}
		return max(0, c.plan.View.Free(c.s.Nodes[i].Name))
	}
	for i := range c.s.Nodes {
		if eligible(i) {
			caps[c.s.Nodes[i].GPUModel] += int64(cur(i) / per)
		}
	}
	fits := func() bool {
		for _, w := range caps {
			if w >= int64(q.Workers) {
				return true
			}
		}
		return false
	}
	if fits() {
		return 0, true
	}
	for _, e := range c.byEnd {
		if c.victims[e.j] {
			continue
		}
		for _, sl := range e.j.Placement {
			i, ok := c.nodeIndex[sl.Node]
			if !ok || !eligible(i) {
				continue
			}
			old := cur(i)
			nw := min(old+sl.GPUs, c.s.Nodes[i].GPUs)
			free[i] = nw
			caps[c.s.Nodes[i].GPUModel] += int64(nw/per) - int64(old/per)
		}
		if fits() {
			return e.end, true
		}
	}
	return 0, false
}
