package pickyman

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/predictor"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Policy is the PickyMan policy. It learns from events (sched.Observer) and decides on
// snapshots (sched.Policy); the operator and the simulator call both from one goroutine.
type Policy struct {
	opts Options
	pred *predictor.Predictor
	ovh  *overhead.Model
	// changed is set by events that change what a cycle can decide (arrivals, starts,
	// suspends, resumes, finishes); last is the time of the last full cycle.
	changed bool
	last    time.Time
	// state is the signature of the last full cycle's snapshot (see signature): a cycle
	// whose snapshot differs is full even without an event, because events and snapshots
	// come from different reads in an operator, and nodes that join or change send none.
	state uint64
	// wake is when the earliest recency protection seen by the last full cycle expires: a
	// job that becomes a possible victim then is a change too (zero: none).
	wake time.Time
	// promote is when class aging next raises a waiting job's class, as the last full cycle
	// ordered them (zero: none).
	promote time.Time
	// waiting is whether the last cycle left a job queued.
	waiting bool
	// buf holds a cycle's scratch slices between cycles (see buffers), scratch the core's.
	buf     buffers
	scratch sched.Scratch
}

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Observer = (*Policy)(nil)
	_ sched.Waker    = (*Policy)(nil)
)

// New returns the policy configured by o.
func New(o Options) *Policy {
	o.defaults()
	return &Policy{opts: o, pred: predictor.New(o.Store, o.Predictor), ovh: overhead.New(o.Overhead), changed: true}
}

// Name returns "pickyman", "pickyman-<variant>", "pickyman-flat" or "pickyman-rigid".
func (p *Policy) Name() string {
	if p.opts.Variant == Full {
		switch {
		case p.opts.FlatPriority:
			return Name + "-flat"
		case p.opts.Rigid:
			return Name + "-rigid"
		}
		return Name
	}
	return Name + "-" + string(p.opts.Variant)
}

// Options returns the options in effect.
func (p *Policy) Options() Options { return p.opts }

// Predictor returns the execution-time predictor the policy learns with.
func (p *Policy) Predictor() *predictor.Predictor { return p.pred }

// Overhead returns the overhead model the policy learns with.
func (p *Policy) Overhead() *overhead.Model { return p.ovh }

// Observe implements sched.Observer: it feeds the predictor and the overhead model.
func (p *Policy) Observe(ev sched.Event) {
	rev := p.pred.Revision()
	p.pred.Observe(ev)
	p.ovh.Observe(ev)
	switch ev.Kind {
	case sched.EventTraffic, sched.EventEpoch:
		// Progress alone only shrinks a saving (see Schedule), but an epoch that moved a
		// model's fit or gave a job its first measured epoch can change a decision: whether
		// an elastic job gains by growing, which victim is cheapest.
		if p.pred.Revision() != rev {
			p.changed = true
		}
	default:
		p.changed = true
	}
}

// PredictionErrors returns the relative errors of the execution times predicted at first
// start (testbed/metrics.PredictionReporter).
func (p *Policy) PredictionErrors() []float64 { return p.pred.PredictionErrors() }

// OverheadErrors returns the relative errors of the predicted suspend delays and resume
// overheads (testbed/metrics.OverheadReporter).
func (p *Policy) OverheadErrors() []float64 { return p.ovh.OverheadErrors() }

// waiting is a queued job with its sort key.
type waiting struct {
	j *sched.Job
	// class is the job's priority class in the queue order (raised by Promote).
	class int32
	// rem is the predicted remaining run time (T_q).
	rem time.Duration
	key time.Duration
	// waited is the time the job has waited (not held GPUs) since it was submitted.
	waited time.Duration
}

// Schedule decides one cycle (docs/policy.md, ordered division):
//
//  1. plan on the snapshot and start the jobs whose reservations are free;
//  2. predict every job's remaining time;
//  3. order the waiting jobs: priority class, then aged predicted remaining time;
//  4. in that order, start each job that fits in the free GPUs (gang, best fit), or an
//     elastic one at a smaller size if that ends sooner than waiting (startSmaller); for
//     the first MaxConsidered that do not, shrink elastic running jobs (shrink) or look for
//     a victim group among the running jobs not yet assigned and preempt it (divide), if
//     it pays;
//  5. let elastic running jobs grow into the idle GPUs that no waiting job left without
//     GPUs could use (grow);
//  6. set each victim's suspend mode and record the overheads expected.
func (p *Policy) Schedule(s *sched.Snapshot) sched.Decisions {
	// 1. Plan; reservations first. Without an event since the last full cycle and with the
	// same jobs in the same phases on the same nodes, no GPU was freed and no job arrived,
	// so nothing new fits and a saving can only have shrunk: skip the rest unless a
	// protection has expired (a new possible victim), class aging promoted a waiting job (a
	// new order) or Refresh has passed (see Options.Refresh).
	plan := p.scratch.NewPlan(s)
	plan.AdmitReserved()
	state := signature(s)
	if !p.changed && state == p.state && !p.due(s.Now) {
		d := plan.Decisions()
		p.waiting = len(plan.Index.Queued) > len(d.Starts)
		return d
	}
	p.changed, p.last, p.wake, p.promote, p.state = false, s.Now, time.Time{}, time.Time{}, state
	// 2. Predict.
	c := p.newCycle(s, plan)
	// 3. Order.
	queue := c.order(plan.Index.Queued)
	// 4. Start and divide.
	considered := 0
	held := false
	for i, w := range queue {
		c.addDemand(w.j, -1)
		if c.built && c.left == 0 && plan.View.FreeGPUs("") == 0 {
			for _, rest := range queue[i:] {
				c.unserved(rest.j)
			}
			break
		}
		if considered >= p.opts.MaxConsidered && !c.mayStart(w.j) && !c.elastic(w.j) {
			c.unserved(w.j)
			continue // no victim search left and it cannot start: Admit would not start it
		}
		if plan.Pending(w.j) {
			continue
		}
		switch plan.Admit(w.j) {
		case sched.NoRoom:
		case sched.Never:
			continue
		default:
			if len(w.j.Reserved) > 0 {
				c.failed = nil // its reservation's held GPUs went back to the pool
			}
			continue
		}
		if c.startSmaller(w) {
			continue
		}
		if considered >= p.opts.MaxConsidered {
			c.unserved(w.j)
			continue
		}
		considered++
		if c.anyElastic() {
			if c.shrink(w) {
				c.failed = nil // a resize moves GPUs: keep no conclusion drawn before it
				continue
			}
		}
		if !c.divide(w) {
			c.unserved(w.j)
			if p.opts.HoldAfter > 0 && !held && c.noGroup && w.waited >= p.opts.HoldAfter {
				// The first job waiting this long keeps the free GPUs nearest to its gang.
				held = c.hold(w.j)
			}
			if p.opts.QueueWait {
				if c.ahead == nil {
					c.ahead = map[string]int64{}
				}
				c.ahead[w.j.GPUModel] += int64(w.j.GPUs())
			}
		}
	}
	// 5. Growth into idle GPUs no waiting job is left without.
	if !c.starved[""] && !p.opts.Rigid && plan.View.FreeGPUs("") > 0 {
		c.grow()
	}
	// 6. Modes and expectations.
	d := plan.Decisions()
	p.waiting = len(plan.Index.Queued) > len(d.Starts)
	// A decision shows in the next snapshot only once it was carried out (the operator's
	// write can fail: a conflict, a rejected validation); until then the next cycle is full,
	// so that it decides again rather than skip an unchanged snapshot.
	p.changed = len(d.Starts)+len(d.Preemptions)+len(d.Reservations) > 0
	for i := range d.Preemptions {
		pr := &d.Preemptions[i]
		if pr.Resize != nil {
			continue // a resize checkpoints at the boundary
		}
		v := c.chosen[pr.JobID]
		pr.Mode = v.mode
		p.ovh.Expect(v.j, v.mode, v.est, s.Now)
	}
	return d
}

// due reports whether a cycle at now must be full although nothing changed: a protection
// seen by the last full cycle has expired, class aging has promoted a waiting job, or
// Refresh has passed since the last full cycle.
func (p *Policy) due(now time.Time) bool {
	reached := func(t time.Time) bool { return !t.IsZero() && !now.Before(t) }
	return reached(p.wake) || reached(p.promote) || (p.opts.Refresh > 0 && now.Sub(p.last) >= p.opts.Refresh)
}

// NextWake implements sched.Waker: while a job waits, the earliest of the times due
// reads (a protection ends, class aging promotes a waiting job, Refresh passes); zero when
// the last cycle left no job waiting and no elastic job to grow later.
func (p *Policy) NextWake() time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	earliest(p.wake) // also the growth of an elastic job (grow)
	if !p.waiting {
		return next
	}
	earliest(p.promote)
	if p.opts.Refresh > 0 {
		earliest(p.last.Add(p.opts.Refresh))
	}
	return next
}

// order sorts the waiting jobs: higher priority first; within a priority, ascending key =
// predicted remaining time - Aging x time waited; then arrival.
func (c *cycle) order(queued []*sched.Job) []waiting {
	out := c.buf.queue[:0]
	top := int32(math.MinInt32)
	for _, j := range queued {
		top = max(top, j.Priority)
	}
	for _, j := range queued {
		rem := c.remaining(j)
		waited := c.now.Sub(j.Submit) - ranFor(j)
		if waited < 0 {
			waited = 0
		}
		key := rem - time.Duration(c.opts.Aging*float64(waited))
		class := j.Priority
		if c.opts.Promote > 0 && class < top {
			steps := min(waited/c.opts.Promote, math.MaxInt32)
			class = min(top, class+int32(steps))
			if class < top {
				// The next promotion: the queue order changes then without an event.
				at := c.now.Add((time.Duration(steps)+1)*c.opts.Promote - waited)
				if c.p.promote.IsZero() || at.Before(c.p.promote) {
					c.p.promote = at
				}
			}
		}
		out = append(out, waiting{j: j, class: class, rem: rem, key: key, waited: waited})
		c.addDemand(j, 1)
	}
	slices.SortFunc(out, func(a, b waiting) int {
		if !c.opts.FlatPriority {
			if x := cmp.Compare(b.class, a.class); x != 0 {
				return x
			}
		}
		if x := cmp.Compare(a.key, b.key); x != 0 {
			return x
		}
		return sched.CompareArrival(a.j, b.j)
	})
	c.buf.queue = out
	return out
}

// mayStart reports false only if queued job j cannot start in this cycle's view: fewer
// GPUs of its model are free than it needs, even counting the GPUs held for its own
// reservation (which Admit gives back to it). A cheap test before Admit.
func (c *cycle) mayStart(j *sched.Job) bool { return c.freeFor(j) >= int64(j.GPUs()) }

// freeFor returns the GPUs of j's model free in this cycle's view, plus those held for j's
// own reservation: an upper bound on the free GPUs a placement of j can use.
func (c *cycle) freeFor(j *sched.Job) int64 {
	free := c.plan.View.FreeGPUs(j.GPUModel)
	// Only a job with a reservation holds GPUs when this is called: the holds a cycle adds
	// are for jobs earlier in the queue order.
	if len(j.Reserved) > 0 {
		free += int64(sched.PlacementGPUs(c.plan.View.Hold(j.ID)))
	}
	return free
}

// ranFor is the time a job has held GPUs (attained GPU service over its GPUs).
func ranFor(j *sched.Job) time.Duration {
	if g := j.GPUs(); g > 0 {
		return j.Attained / time.Duration(g)
	}
	return 0
}

// seed keys signature's hashes; one per process is enough, signatures are never stored.
var seed = maphash.MakeSeed()

// signature summarizes what a cycle decides on besides time: each job's identity and phase,
// and each node's name, model, GPUs, promised GPUs and schedulability. It is a sum of
// per-item hashes, so the order of Jobs and Nodes does not matter.
func signature(s *sched.Snapshot) uint64 {
	var sum uint64
	var h maphash.Hash
	h.SetSeed(seed)
	for _, j := range s.Jobs {
		h.Reset()
		h.WriteString(j.ID)
		h.WriteByte(0)
		h.WriteString(string(j.Phase))
		sum += h.Sum64()
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		h.Reset()
		h.WriteString(n.Name)
		h.WriteByte(0)
		h.WriteString(n.GPUModel)
		var b [9]byte
		binary.LittleEndian.PutUint32(b[0:], uint32(n.GPUs))
		binary.LittleEndian.PutUint32(b[4:], uint32(n.Used))
		if n.Unschedulable {
			b[8] = 1
		}
		h.Write(b[:])
		sum += h.Sum64()
	}
	return sum + uint64(len(s.Jobs))<<32 + uint64(len(s.Nodes))
}
