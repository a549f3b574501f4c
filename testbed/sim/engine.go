package sim

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// Clock is the simulation clock: the engine sets it to each event's time, and a policy or
// observer that reads time reads it there. k8s.io/utils/clock/testing's FakeClock
// satisfies it.
type Clock interface {
	Now() time.Time
	SetTime(t time.Time)
}

var _ Clock = (*testingclock.FakeClock)(nil)

// maxCyclesPerInstant bounds how often the policy runs at one simulated instant (a policy
// that preempts and restarts jobs forever without time passing is a bug).
const maxCyclesPerInstant = 10000

// Engine simulates one policy on one trace and cluster. It is not safe for concurrent use;
// run one engine per goroutine.
type Engine struct {
	cfg      Config
	policy   sched.Policy
	observer sched.Observer
	waker    sched.Waker
	clock    Clock

	nodes     []sched.Node
	nodeIndex map[string]int
	gpus      int32

	jobs   []*job // every job of the trace, in submit order
	byID   map[string]*job
	next   int    // next arrival
	active []*job // submitted and not finished (as of the last refresh), in arrival order
	// holders are the jobs that hold GPUs (Running, Suspending), in arrival order: the only
	// jobs whose snapshot fields change with time.
	holders []*job
	// ended is whether a job finished since the last refresh (active and snap.Jobs hold it).
	ended bool
	// snap.Jobs holds the active jobs' sched.Jobs, in the same order; both are kept across
	// cycles and change only by arrivals and finishes.
	snap sched.Snapshot
	// scratch indexes the snapshot when decisions are carried out.
	scratch sched.Scratch

	q   eventQueue
	now time.Duration
	// wakeAt is the pending wake-up the policy asked for (sched.Waker); wakeGen tells
	// it from the wake-ups it replaced.
	wakeAt      time.Duration
	wakeGen     uint32
	wakePending bool
	tickPending bool
	idleWakes   int

	queued, holding int   // jobs Queued; jobs Running or Suspending
	reservations    int   // queued jobs with a reservation
	used            int32 // GPUs held

	series   *metrics.Series
	events   int64
	cycles   int64
	finished atomic.Int64
	progress []sched.Event // scratch for progress observations (traffic)
	epochs   []epochReport // scratch for progress observations (epochs)
	merged   []sched.Event // scratch for progress observations in one sort
}

// New returns an engine for jobs on cluster under policy. Jobs whose gang can never fit
// the cluster are rejected and recorded as such.
func New(cluster traces.Cluster, jobs []traces.Job, policy sched.Policy, cfg Config) (*Engine, error) {
	cfg.defaults()
	e := &Engine{cfg: cfg, policy: policy, nodeIndex: map[string]int{}}
	e.observer, _ = policy.(sched.Observer)
	e.waker, _ = policy.(sched.Waker)
	e.clock = testingclock.NewFakeClock(Epoch)
	for pi, pool := range cluster.Pools {
		for i := 0; i < pool.Count; i++ {
			name := fmt.Sprintf("node-%d-%d", pi, i)
			if len(cluster.Pools) == 1 {
				name = fmt.Sprintf("node-%d", i)
			}
			e.nodeIndex[name] = len(e.nodes)
			e.nodes = append(e.nodes, sched.Node{Name: name, GPUModel: pool.GPUModel, GPUs: pool.GPUs})
			e.gpus += pool.GPUs
		}
	}
	if len(e.nodes) == 0 {
		return nil, fmt.Errorf("sim: cluster %q has no nodes", cluster.Source)
	}
	e.jobs = make([]*job, len(jobs))
	var maxNode int32
	for i := range e.nodes {
		maxNode = max(maxNode, e.nodes[i].GPUs)
	}
	e.byID = make(map[string]*job, len(jobs))
	for i := range jobs {
		if e.byID[jobs[i].ID] != nil {
			return nil, fmt.Errorf("sim: job %q appears twice in the trace", jobs[i].ID)
		}
		e.jobs[i] = newJob(&jobs[i], &e.cfg, maxNode)
		e.byID[jobs[i].ID] = e.jobs[i]
	}
	slices.SortStableFunc(e.jobs, func(a, b *job) int { return int(a.rec.Submit - b.rec.Submit) })
	for i, j := range e.jobs {
		j.order = i
		if reason := e.neverFits(j); reason != "" {
			j.rec.Rejected, j.rec.RejectReason = true, reason
			j.finished = true
		}
	}
	e.series = metrics.NewSeries(e.gpus, cfg.SeriesPoints, time.Minute)
	e.snap.Nodes = e.nodes
	return e, nil
}

// SetClock replaces the simulation clock (before Run).
func (e *Engine) SetClock(c Clock) { e.clock = c }

// Progress returns how many jobs have finished or been rejected, and the trace's size. It
// is safe to call from another goroutine while Run runs.
func (e *Engine) Progress() (done, total int) { return int(e.finished.Load()), len(e.jobs) }

// neverFits says why a job's gang can not be placed even on the empty cluster, "" if it can.
func (e *Engine) neverFits(j *job) string {
	if j.s.GPUs() <= 0 {
		return "no GPUs requested"
	}
	if j.work <= 0 {
		return "no service time"
	}
	var workers int32
	for i := range e.nodes {
		n := &e.nodes[i]
		if j.s.GPUModel != "" && n.GPUModel != j.s.GPUModel {
			continue
		}
		workers += n.GPUs / j.s.GPUsPerWorker
		if workers >= j.s.Workers {
			return ""
		}
	}
	return fmt.Sprintf("gang of %d x %d GPUs does not fit the cluster", j.s.Workers, j.s.GPUsPerWorker)
}

// Run simulates until every job has finished and returns the run's records.
func (e *Engine) Run(ctx context.Context) (*metrics.Run, error) {
	start := time.Now()
	for _, j := range e.jobs {
		if j.finished {
			e.finished.Add(1)
		}
	}
	lastInstant, cyclesAtInstant := time.Duration(-1), 0
	for steps := 0; ; steps++ {
		t, ok := e.nextTime()
		if !ok {
			break
		}
		if steps%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if t == lastInstant {
			cyclesAtInstant++
			if cyclesAtInstant > maxCyclesPerInstant {
				return nil, fmt.Errorf("sim: policy %s ran %d cycles at %v without time passing", e.policy.Name(), cyclesAtInstant, t)
			}
		} else {
			lastInstant, cyclesAtInstant = t, 0
		}
		if err := e.step(t); err != nil {
			return nil, err
		}
	}
	if e.queued > 0 {
		return nil, fmt.Errorf("sim: policy %s left %s on an idle cluster with no event or wake-up due", e.policy.Name(), e.queuedJobs())
	}
	if err := e.checkEnd(); err != nil {
		return nil, err
	}
	return e.result(time.Since(start)), nil
}

// nextTime is the time of the next arrival or event.
func (e *Engine) nextTime() (time.Duration, bool) {
	for e.next < len(e.jobs) && e.jobs[e.next].rec.Rejected {
		e.next++
	}
	// A tick that comes due with no job queued has nothing to do; a replaced wake-up is
	// stale.
	for e.q.Len() > 0 && e.idle(e.q.peek()) {
		if e.q.pop().kind == evTick {
			e.tickPending = false
		}
	}
	ok := false
	var t time.Duration
	if e.next < len(e.jobs) {
		t, ok = e.jobs[e.next].rec.Submit, true
	}
	if e.q.Len() > 0 && (!ok || e.q.peek().at <= t) {
		t, ok = e.q.peek().at, true
	}
	return t, ok
}

// idle reports whether an event has nothing to do: a tick with no job queued, or a
// wake-up the policy has replaced since.
func (e *Engine) idle(ev *event) bool {
	return (ev.kind == evTick && e.queued == 0) || (ev.kind == evWake && ev.gen != e.wakeGen)
}

// step is one simulated instant: every event at time t, then one scheduling cycle.
func (e *Engine) step(t time.Duration) error {
	// 1. Advance the clock and the progress of jobs that hold GPUs; report traffic and
	// epochs to an observing policy.
	e.now = t
	e.clock.SetTime(Epoch.Add(t))
	e.advance(t)

	// 2. Apply every event of this instant: heap events in sequence order, then arrivals.
	// woken is whether a wake-up or a tick is all that called this cycle.
	woken, happened := false, false
	for e.q.Len() > 0 && e.q.peek().at == t {
		ev := e.q.pop()
		switch {
		case ev.kind == evWake && ev.gen != e.wakeGen:
			continue // replaced by a later answer of the policy
		case ev.kind == evWake:
			e.events++
			woken, e.wakePending = true, false
			continue
		case ev.kind == evTick:
			e.events++
			woken = true
			e.tickPending = false
			continue
		}
		e.events++
		happened = true
		if err := e.handle(&ev); err != nil {
			return err
		}
	}
	for e.next < len(e.jobs) && e.jobs[e.next].rec.Submit == t {
		j := e.jobs[e.next]
		e.next++
		if j.rec.Rejected {
			continue
		}
		e.events++
		happened = true
		e.active = append(e.active, j)
		e.snap.Jobs = append(e.snap.Jobs, &j.s)
		e.queued++
		e.observe(sched.EventSubmitted, j, 0, 0)
	}

	// 3. Refresh the snapshot (drop finished jobs, update what running jobs report) and
	// 4. ask the policy, unless no job waits and no elastic job could grow into idle GPUs:
	// then there is nothing to start, preempt for or resize, and the cycle is skipped.
	var d sched.Decisions
	growable := e.growable()
	called := e.queued > 0 || growable
	if called {
		e.refresh(t)
		e.cycles++
		d = e.policy.Schedule(&e.snap)
	}

	// 5. Validate and carry out the decisions.
	if e.cfg.Check {
		if err := sched.Validate(&e.snap, d); err != nil {
			return fmt.Errorf("sim: policy %s at %v: invalid decisions (%s): %w", e.policy.Name(), t, describe(&d), err)
		}
	}
	if err := e.apply(t, &d); err != nil {
		return fmt.Errorf("sim: policy %s at %v: %w", e.policy.Name(), t, err)
	}
	if e.cfg.Check {
		if err := e.checkState(t); err != nil {
			return err
		}
	}
	if err := e.watchIdle(woken && !happened, &d); err != nil {
		return err
	}

	// 6. Record the time series; run the next cycle at once if this one started or
	// preempted a job and a job still waits (a decision is an event, as its writes are in
	// the operator; a reservation re-issued is not); ask the
	// policy when to look again without an event; with a Tick poll keep ticking while jobs
	// wait.
	e.series.Record(t, e.used, e.queued)
	if called && len(d.Starts)+len(d.Preemptions) > 0 && (e.queued > 0 || e.growable()) {
		e.q.push(event{at: t, kind: evDecided})
	}
	if called {
		e.scheduleWake(t)
	}
	if e.cfg.Tick > 0 && e.queued > 0 && !e.tickPending {
		e.q.push(event{at: t + e.cfg.Tick, kind: evTick})
		e.tickPending = true
	}
	return nil
}

// scheduleWake queues the wake-up the policy asks for after a cycle at t (sched.Waker),
// replacing the one pending: the policy's latest answer holds. A time not after t is
// ignored (the engine already runs a second cycle at t when decisions free GPUs at once).
func (e *Engine) scheduleWake(t time.Duration) {
	if e.waker == nil {
		return
	}
	w := e.waker.NextWake()
	at := w.Sub(Epoch)
	if w.IsZero() || at <= t {
		if e.wakePending {
			e.wakeGen++ // no wake-up: the pending one is stale
			e.wakePending = false
		}
		return
	}
	if e.wakePending && at == e.wakeAt {
		return
	}
	e.wakeGen++
	e.wakeAt, e.wakePending = at, true
	e.q.push(event{at: at, kind: evWake, gen: e.wakeGen})
}

// growable reports whether GPUs are idle and an elastic job runs below its maximum size.
func (e *Engine) growable() bool {
	if e.cfg.Elastic.Share <= 0 || e.used >= e.gpus {
		return false
	}
	for _, j := range e.holders {
		if j.s.Phase == sched.Running && j.s.Elastic() && j.s.Workers < j.s.MaxWorkers {
			return true
		}
	}
	return false
}

// addHolder adds j to the holders when it is admitted, in arrival order.
func (e *Engine) addHolder(j *job) {
	i, _ := slices.BinarySearchFunc(e.holders, j.order, func(h *job, order int) int { return h.order - order })
	e.holders = slices.Insert(e.holders, i, j)
}

// dropHolder removes j from the holders when its GPUs are free.
func (e *Engine) dropHolder(j *job) {
	if i, ok := slices.BinarySearchFunc(e.holders, j.order, func(h *job, order int) int { return h.order - order }); ok {
		e.holders = slices.Delete(e.holders, i, i+1)
	}
}

// watchIdle fails a run in which jobs wait on an idle cluster forever while the policy
// keeps waking up (woken: only a wake-up or a tick called this cycle).
func (e *Engine) watchIdle(woken bool, d *sched.Decisions) error {
	if !woken {
		return nil
	}
	if e.queued == 0 || e.holding > 0 || e.next < len(e.jobs) || len(d.Starts)+len(d.Preemptions)+len(d.Reservations) > 0 {
		e.idleWakes = 0
		return nil
	}
	e.idleWakes++
	if e.idleWakes > e.cfg.MaxIdleWakes {
		return fmt.Errorf("sim: policy %s left %s on an idle cluster for %d wake-ups", e.policy.Name(), e.queuedJobs(), e.idleWakes)
	}
	return nil
}

// queuedJobs names the queued jobs for an error: "3 jobs queued (a, b, c...)".
func (e *Engine) queuedJobs() string {
	ids := []string{}
	for _, j := range e.active {
		if !j.finished && j.s.Phase == sched.Queued && len(ids) < 5 {
			ids = append(ids, j.s.ID)
		}
	}
	return fmt.Sprintf("%d jobs queued (%v...)", e.queued, ids)
}

// refresh drops finished jobs from the snapshot, if any finished since the last refresh,
// and updates the jobs that hold GPUs: O(holders) when no job finished.
func (e *Engine) refresh(t time.Duration) {
	e.snap.Now = Epoch.Add(t)
	if e.ended {
		e.ended = false
		kept := e.active[:0]
		for _, j := range e.active {
			if !j.finished {
				kept = append(kept, j)
			}
		}
		clear(e.active[len(kept):])
		e.active = kept
		e.snap.Jobs = slices.DeleteFunc(e.snap.Jobs, func(s *sched.Job) bool { return s.Phase == sched.Finished })
	}
	for _, j := range e.holders {
		j.refresh(t)
	}
}

// result collects the run's records.
func (e *Engine) result(wall time.Duration) *metrics.Run {
	r := &metrics.Run{Policy: e.policy.Name(), GPUs: e.gpus, Events: e.events, Cycles: e.cycles, Wall: wall}
	r.Jobs = make([]metrics.JobRecord, len(e.jobs))
	for i, j := range e.jobs {
		r.Jobs[i] = j.rec
	}
	r.Series = e.series.Points(e.now)
	if p, ok := e.policy.(metrics.PredictionReporter); ok {
		r.PredictionErrors = p.PredictionErrors()
	}
	if p, ok := e.policy.(metrics.OverheadReporter); ok {
		r.OverheadErrors = p.OverheadErrors()
	}
	return r
}
