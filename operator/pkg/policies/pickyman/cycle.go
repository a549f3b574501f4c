package pickyman

import (
	"cmp"
	"math"
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
	buf  *buffers

	// cands holds the running jobs that may be victims at all (not protected by recency or
	// budget), built on the first victim search; classes splits them by cost class, each
	// read in cost order.
	cands   []*cand
	classes []lazySorted[*cand]
	// hasFinishing: classes[0] holds the candidates whose boundary suspend is their end;
	// finishingGPUs counts their GPUs.
	hasFinishing  bool
	finishingGPUs int64
	// failed holds this cycle's failed searches among those candidates (finishingFailed).
	failed []failure
	built  bool
	// left counts the candidates not chosen yet.
	left int
	// chosen maps victim IDs to their candidate entry.
	chosen map[string]*cand
	// run holds every running job with its predicted remaining time, and every queued job
	// holding a usable reservation that had not started when the candidates were built;
	// byEnd reads it by that time (ties by ID), for the natural-wait estimate.
	run   []ending
	byEnd lazySorted[ending]
	// started holds the jobs the plan has started in this cycle, in end order, added as
	// natural waits are computed (syncStarts): startsSeen counts the plan's starts read, and
	// inRun names the jobs of run that a start may repeat.
	started    []ending
	startsSeen int
	inRun      map[string]bool
	// victims holds the jobs chosen as victims in this cycle.
	victims map[*sched.Job]bool
	// natural caches naturalWait by gang shape for the cycle.
	natural map[shape]waitResult
	// ahead counts, per GPU model, the GPUs of the waiting jobs already passed in this
	// cycle's order that found neither free GPUs nor victims; freed reads the running
	// jobs' GPUs per model in end order (QueueWait only).
	ahead map[string]int64
	freed map[string]*freed
	// demand counts, per GPU model, the GPUs of the waiting jobs not yet reached by this
	// cycle's loop (Exchange only; see backlogged).
	demand map[string]int64
	// noGroup: the last divide searched every candidate (not only those ending at their
	// boundary) and found no group that frees a placement (HoldAfter).
	noGroup bool
	// starved holds the GPU models ("" for any) of the waiting jobs this cycle leaves
	// without GPUs: no elastic job grows into GPUs they could use (grow).
	starved map[string]bool
	scratch []*sched.Job
	// hasElastic caches anyElastic: 0 unknown, 1 yes, -1 no.
	hasElastic int8
}

// buffers are the slices and indexes a cycle reuses from the previous one, so that a full
// cycle allocates little beyond the core's plan and its decisions. They hold no state that
// a decision depends on: each cycle overwrites what it reads.
type buffers struct {
	store   []cand
	cands   []*cand
	run     []ending
	queue   []waiting
	byGPUs  map[int32][]*cand
	sizes   []int32
	classes []lazySorted[*cand]
	// free and touched are naturalWait's per-node free GPUs and the nodes it changed.
	free    []int32
	touched []int
	caps    []int64
	// nodes indexes the snapshot's nodes by name; rebuilt when the node list changes.
	nodes nodeTable
}

// nodeTable maps node names to their index in Snapshot.Nodes and GPU models to a small
// number, for the node list it was built from.
type nodeTable struct {
	names  []string
	models []string
	index  map[string]int
	// model[i] is the number of node i's GPU model; modelNames lists the models.
	model      []int
	modelNames []string
}

// update rebuilds t if nodes differ from the list t was built from: O(nodes) string
// comparisons when they do not.
func (t *nodeTable) update(nodes []sched.Node) {
	if len(nodes) == len(t.names) {
		same := true
		for i := range nodes {
			if nodes[i].Name != t.names[i] || nodes[i].GPUModel != t.models[i] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	t.names, t.models = t.names[:0], t.models[:0]
	t.index = make(map[string]int, len(nodes))
	t.model, t.modelNames = t.model[:0], t.modelNames[:0]
	for i := range nodes {
		n := &nodes[i]
		t.names = append(t.names, n.Name)
		t.models = append(t.models, n.GPUModel)
		t.index[n.Name] = i
		m := slices.Index(t.modelNames, n.GPUModel)
		if m < 0 {
			m = len(t.modelNames)
			t.modelNames = append(t.modelNames, n.GPUModel)
		}
		t.model = append(t.model, m)
	}
}

// ending is a job that holds GPUs until its predicted end: a running job on its
// placement, a job started in this cycle on its start's, a queued job on its reservation.
// end is its predicted remaining time.
type ending struct {
	j   *sched.Job
	end time.Duration
	at  []sched.Slot
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
	return &cycle{p: p, opts: p.opts, now: s.Now, s: s, plan: plan, buf: &p.buf, chosen: map[string]*cand{}, victims: map[*sched.Job]bool{}}
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
// the same order for every waiting job (see divide). Each class and the running jobs by
// predicted end are read lazily (lazySorted): a cycle reads only their heads.
func (c *cycle) build() {
	c.built = true
	b := c.buf
	b.nodes.update(c.s.Nodes)
	if b.byGPUs == nil {
		b.byGPUs = map[int32][]*cand{}
	}
	for g, cl := range b.byGPUs {
		b.byGPUs[g] = cl[:0]
	}
	var finishing []*cand
	running := c.plan.Index.Running
	c.run = slices.Grow(b.run[:0], len(running))
	// One backing array for all candidates, reused across cycles; c.cands points into it,
	// so it must not grow once filled: reserve room for every running job.
	store := slices.Grow(b.store[:0], len(running))
	c.cands = b.cands[:0]
	for _, j := range running {
		rem, epoch := c.predict(j)
		c.run = append(c.run, ending{j, rem, j.Placement})
		if c.plan.Preempted(j.ID) || j.Preemptions >= c.budget(j) {
			continue
		}
		if until := j.LastStart.Add(c.opts.Protect); c.now.Before(until) {
			if c.p.wake.IsZero() || until.Before(c.p.wake) {
				c.p.wake = until
			}
			continue
		}
		store = append(store, cand{j: j, gpus: j.GPUs(), rem: rem})
		v := &store[len(store)-1]
		if len(j.Placement) > 0 {
			if i, ok := b.nodes.index[j.Placement[0].Node]; ok {
				v.model = b.nodes.models[i]
			}
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
			c.finishingGPUs += int64(v.gpus)
		} else {
			b.byGPUs[v.gpus] = append(b.byGPUs[v.gpus], v)
		}
	}
	c.addReserved()
	b.store, b.cands, b.run = store, c.cands, c.run
	c.byEnd.reset(c.run, byEnd)
	byWaste := func(a, b *cand) int {
		if x := cmp.Compare(a.waste, b.waste); x != 0 {
			return x
		}
		if x := cmp.Compare(b.rem, a.rem); x != 0 { // longer remaining first
			return x
		}
		return cmp.Compare(a.j.ID, b.j.ID)
	}
	c.classes = b.classes[:0]
	if len(finishing) > 0 {
		var l lazySorted[*cand]
		l.reset(finishing, func(a, b *cand) int {
			if x := cmp.Compare(a.delay, b.delay); x != 0 {
				return x
			}
			return cmp.Compare(a.j.ID, b.j.ID)
		})
		c.classes = append(c.classes, l)
		c.hasFinishing = true
	}
	b.sizes = b.sizes[:0]
	for g, cl := range b.byGPUs {
		if len(cl) > 0 {
			b.sizes = append(b.sizes, g)
		}
	}
	slices.Sort(b.sizes)
	for _, g := range b.sizes {
		var l lazySorted[*cand]
		l.reset(b.byGPUs[g], byWaste)
		c.classes = append(c.classes, l)
	}
	b.classes = c.classes
}

// budget is the number of preemptions after which j is protected: Budget, plus one for
// every BudgetEvery j has run (Options.BudgetEvery).
func (c *cycle) budget(j *sched.Job) int32 {
	b := c.opts.Budget
	if c.opts.BudgetEvery > 0 {
		b += int32(min(ranFor(j)/c.opts.BudgetEvery, math.MaxInt32-time.Duration(b)))
	}
	return b
}

// byEnd orders running jobs by predicted remaining time, then ID.
func byEnd(a, b ending) int {
	if x := cmp.Compare(a.end, b.end); x != 0 {
		return x
	}
	return cmp.Compare(a.j.ID, b.j.ID)
}

// addReserved adds to run the queued jobs that hold a usable reservation and have not
// started in this cycle: their reserved GPUs are out of the free ones until they have run,
// and without them a natural wait would take those GPUs to be held for ever. The time until
// the reservation's GPUs are all free is not counted (the wait errs short).
func (c *cycle) addReserved() {
	starts := c.plan.Decisions().Starts
	var started map[string]bool
	if len(starts) > 0 {
		started = make(map[string]bool, len(starts))
		for _, st := range starts {
			started[st.JobID] = true
		}
	}
	for _, j := range c.plan.Index.Queued {
		if len(j.Reserved) == 0 || started[j.ID] || !c.plan.View.ValidReservation(j) {
			continue
		}
		c.run = append(c.run, ending{j, c.remaining(j), j.Reserved})
		if c.inRun == nil {
			c.inRun = map[string]bool{}
		}
		c.inRun[j.ID] = true
	}
}

// syncStarts adds the plan's starts made since its last call to started, in end order: a
// job started in this cycle holds its GPUs until its predicted end, not for ever. A natural
// wait cached before a start stays as it was (it counted those GPUs free: too short).
func (c *cycle) syncStarts() {
	starts := c.plan.Decisions().Starts
	for i := c.startsSeen; i < len(starts); i++ {
		j := c.plan.StartedJob(i)
		if c.inRun[j.ID] {
			continue
		}
		e := ending{j, c.remaining(j), starts[i].Placement}
		at, _ := slices.BinarySearchFunc(c.started, e, byEnd)
		c.started = slices.Insert(c.started, at, e)
	}
	c.startsSeen = len(starts)
}

// naturalWait estimates how long q would wait without preemption: until the jobs holding
// GPUs (running and not chosen as victims, started in this cycle, or queued on a
// reservation), ending in predicted order, free enough GPUs for a placement. It ignores the
// other waiting jobs (which would take some of those GPUs first), so it underestimates the
// wait and the saving, and errs towards not preempting. ok is false if those jobs never
// free enough GPUs. The running jobs are read by predicted end from a heap built once per
// cycle (lazySorted), merged with the cycle's starts; the scan tracks worker capacity per
// GPU model incrementally, so it costs O(nodes + k log jobs) for the k jobs scanned. The
// result is cached per gang shape for the whole cycle:
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

// expectedWait is the natural wait the benefit tests use for q: naturalWait, but with
// WaitFloor at least WaitFloor x the time q has already waited (Options.WaitFloor).
func (c *cycle) expectedWait(q waiting) (time.Duration, bool) {
	w, ok := c.naturalWait(q.j)
	if ok && c.opts.WaitFloor > 0 {
		w = max(w, time.Duration(c.opts.WaitFloor*float64(q.waited)))
	}
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
	per := q.GPUsPerWorker
	if per <= 0 {
		return 0, false
	}
	b := c.buf
	nt := &b.nodes
	nodes := c.s.Nodes
	// Worker capacity per GPU model (caps, by model number) of the free GPUs, then of the
	// GPUs freed as jobs end; free holds each node's free GPUs as jobs end, -1 when
	// untouched (read from the view).
	b.caps = append(b.caps[:0], make([]int64, len(nt.modelNames))...)
	if len(b.free) != len(nodes) {
		b.free = make([]int32, len(nodes))
		for i := range b.free {
			b.free[i] = -1
		}
	}
	defer func() {
		for _, i := range b.touched {
			b.free[i] = -1
		}
		b.touched = b.touched[:0]
	}()
	eligible := func(i int) bool {
		n := &nodes[i]
		return !n.Unschedulable && (q.GPUModel == "" || n.GPUModel == q.GPUModel)
	}
	cur := func(i int) int32 {
		if f := b.free[i]; f >= 0 {
			return f
		}
		return max(0, c.plan.View.Free(nodes[i].Name))
	}
	for i := range nodes {
		if eligible(i) {
			b.caps[nt.model[i]] += int64(cur(i) / per)
		}
	}
	fits := func() bool {
		for _, w := range b.caps {
			if w >= int64(q.Workers) {
				return true
			}
		}
		return false
	}
	if fits() {
		return 0, true
	}
	c.syncStarts()
	for k, si := 0, 0; ; {
		// Merge the running jobs (and reservations) with this cycle's starts, by end.
		e, ok := c.byEnd.at(k)
		switch {
		case si < len(c.started) && (!ok || byEnd(c.started[si], e) < 0):
			e = c.started[si]
			si++
		case ok:
			k++
		default:
			return 0, false
		}
		if c.victims[e.j] {
			continue
		}
		for _, sl := range e.at {
			i, ok := nt.index[sl.Node]
			if !ok || !eligible(i) {
				continue
			}
			old := cur(i)
			nw := min(old+sl.GPUs, nodes[i].GPUs)
			if b.free[i] < 0 {
				b.touched = append(b.touched, i)
			}
			b.free[i] = nw
			b.caps[nt.model[i]] += int64(nw/per) - int64(old/per)
		}
		if fits() {
			return e.end, true
		}
	}
}
