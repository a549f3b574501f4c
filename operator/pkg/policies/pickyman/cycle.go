package pickyman

import (
	"cmp"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/overhead"
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
	byEnd      []*sched.Job
	byEndStale bool
	ends       map[string]time.Time
	scratch    []*sched.Job
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
	return &cycle{p: p, opts: p.opts, now: s.Now, s: s, plan: plan, chosen: map[string]*cand{}, byEndStale: true}
}

// remaining is the predicted remaining run time of j (T_q for a waiting job), including
// the rest of its warm-up if it is warming up. A job nothing is known about gets Unknown
// plus the time it has run, so such jobs are served least attained service first.
func (c *cycle) remaining(j *sched.Job) time.Duration {
	var rem time.Duration
	if c.opts.Variant == Oracle && j.Oracle.Known {
		rem = j.Oracle.Remaining
	} else if pr := c.p.pred.Predict(j); pr.Known() {
		rem = pr.Remaining
	} else {
		rem = c.opts.Unknown + ranFor(j)
	}
	if j.Phase != sched.Queued && c.now.Before(j.WarmUntil) {
		rem += j.WarmUntil.Sub(c.now)
	}
	return rem
}

// epochTime is the epoch time the overhead model uses for j.
func (c *cycle) epochTime(j *sched.Job) time.Duration {
	if c.opts.Variant == Oracle {
		if j.EpochTime > 0 {
			return j.EpochTime
		}
		if j.Oracle.Known && j.Epochs > 0 {
			return j.Oracle.Service / time.Duration(j.Epochs)
		}
	}
	return c.p.pred.Predict(j).EpochTime
}

// build computes the candidates: every running job not protected by recency or budget,
// with its suspend mode, delay and overhead, split into cost classes whose members are in
// the same order for every waiting job (see divide).
func (c *cycle) build() {
	c.built = true
	c.nodeModel = make(map[string]string, len(c.s.Nodes))
	for i := range c.s.Nodes {
		c.nodeModel[c.s.Nodes[i].Name] = c.s.Nodes[i].GPUModel
	}
	byGPUs := map[int32][]*cand{}
	var finishing []*cand
	for _, j := range c.plan.Index.Running {
		if c.plan.Preempted(j.ID) || c.now.Sub(j.LastStart) < c.opts.Protect || j.Preemptions >= c.opts.Budget {
			continue
		}
		v := &cand{j: j, gpus: j.GPUs(), rem: c.remaining(j)}
		if len(j.Placement) > 0 {
			v.model = c.nodeModel[j.Placement[0].Node]
		}
		v.est = c.p.ovh.Estimate(j, c.epochTime(j), c.now)
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

// endOf is the predicted time running job j gives its GPUs back.
func (c *cycle) endOf(j *sched.Job) time.Time {
	if c.ends == nil {
		c.ends = make(map[string]time.Time, len(c.plan.Index.Running))
	}
	if t, ok := c.ends[j.ID]; ok {
		return t
	}
	t := c.now.Add(c.remaining(j))
	c.ends[j.ID] = t
	return t
}

// naturalWait estimates how long q would wait without preemption: until the running jobs
// not chosen as victims, ending in predicted order, free enough GPUs for a placement. It
// ignores the other waiting jobs (which would take some of those GPUs first), so it
// underestimates the wait and the saving, and errs towards not preempting. ok is false
// if the running jobs never free enough GPUs.
func (c *cycle) naturalWait(q *sched.Job) (time.Duration, bool) {
	if c.byEndStale {
		c.byEnd = c.byEnd[:0]
		for _, j := range c.plan.Index.Running {
			if !c.plan.Preempted(j.ID) {
				c.byEnd = append(c.byEnd, j)
			}
		}
		slices.SortFunc(c.byEnd, func(a, b *sched.Job) int {
			if x := c.endOf(a).Compare(c.endOf(b)); x != 0 {
				return x
			}
			return cmp.Compare(a.ID, b.ID)
		})
		c.byEndStale = false
	}
	freed, _, ok := c.plan.View.FindVictims(q, c.byEnd)
	if !ok {
		return 0, false
	}
	var last time.Time
	for _, j := range freed {
		if e := c.endOf(j); e.After(last) {
			last = e
		}
	}
	if last.Before(c.now) {
		return 0, true
	}
	return last.Sub(c.now), true
}
