package tiresias

import (
	"fmt"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Name is the registered name of the policy.
const Name = "tiresias"

// Reason is the preemption reason Tiresias reports.
const Reason = "HigherQueue"

// DefaultThresholds are the default queue thresholds on attained GPU service: two queues
// split at 3600 GPU-seconds, the example configuration of the authors' simulator
// (github.com/SymbioticLab/Tiresias, simulator/README.md: num_queue = 2,
// queue_limit = [3600]).
var DefaultThresholds = []time.Duration{3600 * time.Second}

// Options configure Tiresias.
type Options struct {
	// Thresholds split attained GPU service (GPU-time) into len(Thresholds)+1 queues:
	// a job with service below Thresholds[0] is in queue 0 (the highest), and so on.
	// They must increase. Nil means DefaultThresholds.
	Thresholds []time.Duration
	// StarveLimit promotes a queued job back to queue 0 once it has waited longer than
	// StarveLimit times the length of its last run (the paper's starvation knob); 0
	// disables promotion, as the authors' simulator does by default
	// (solve_starvation = 0).
	StarveLimit float64
}

// Tiresias sorts jobs into K queues by the GPU service they have attained (GPU-time: run
// time x GPUs, Job.Attained), so that it needs no knowledge of run times: a new job starts
// in queue 0 and sinks as it consumes service. Queued jobs are served queue by queue and,
// within a queue, in arrival order (submit time, then ID). A job that does not fit in the
// free GPUs preempts running jobs of strictly lower queues: the lowest queue first and,
// within a queue, the latest arrival first (the jobs that come last in the same order),
// taking a minimal set (sched.View.FindVictims). Victims are suspended now and the GPUs
// they free are reserved for the job.
//
// Starvation guard: a queued job that has run before and has waited since it last
// stopped longer than StarveLimit times its last run is promoted to queue 0; its service
// counts from the promotion on (the policy remembers the service at promotion), so it is
// not demoted again at once. This is the policy's only state; it is forgotten for jobs
// that leave the snapshot. Schedule is meant to be called by one goroutine.
type Tiresias struct {
	opts Options
	// base is the attained service at a job's last promotion.
	base map[string]time.Duration
	// wake is the last cycle's NextWake.
	wake time.Time
	// scratch, sorter, queue and cands are reused from cycle to cycle (sched.Scratch).
	scratch      sched.Scratch
	sorter       sched.KeySorter
	queue, cands []*sched.Job
}

var (
	_ sched.Policy = (*Tiresias)(nil)
	_ sched.Waker  = (*Tiresias)(nil)
)

// New returns a Tiresias policy.
func New(opts Options) (*Tiresias, error) {
	if opts.Thresholds == nil {
		opts.Thresholds = DefaultThresholds
	}
	for i, t := range opts.Thresholds {
		if t <= 0 || (i > 0 && t <= opts.Thresholds[i-1]) {
			return nil, fmt.Errorf("tiresias: thresholds must be positive and increasing, got %v", opts.Thresholds)
		}
	}
	if opts.StarveLimit < 0 {
		return nil, fmt.Errorf("tiresias: starve limit must not be negative, got %v", opts.StarveLimit)
	}
	return &Tiresias{opts: opts, base: make(map[string]time.Duration)}, nil
}

// Name returns "tiresias".
func (t *Tiresias) Name() string { return Name }

// Queue returns the queue index of j (0 is the highest priority).
func (t *Tiresias) Queue(j *sched.Job) int {
	svc := j.Attained - t.base[j.ID]
	for i, th := range t.opts.Thresholds {
		if svc < th {
			return i
		}
	}
	return len(t.opts.Thresholds)
}

func (t *Tiresias) queueKey(j *sched.Job) int64 { return int64(t.Queue(j)) }

// lastRun returns how long j last ran and how long it has waited since, or false if
// it never ran. Without LastStop it takes the run as ending when the job's service,
// spread over its GPUs, ran out after LastStart.
func lastRun(j *sched.Job, now time.Time) (run, waited time.Duration, ok bool) {
	if j.LastStart.IsZero() || j.Attained <= 0 {
		return 0, 0, false
	}
	stop := j.LastStop
	if stop.IsZero() || stop.Before(j.LastStart) {
		g := time.Duration(max(j.GPUs(), 1))
		stop = j.LastStart.Add(j.Attained / g)
		if stop.After(now) {
			stop = now
		}
	}
	return stop.Sub(j.LastStart), now.Sub(stop), true
}

// promote applies the starvation guard and forgets jobs that left.
func (t *Tiresias) promote(s *sched.Snapshot, ix *sched.Index) {
	for id := range t.base {
		if ix.Job(id) == nil {
			delete(t.base, id)
		}
	}
	if t.opts.StarveLimit <= 0 {
		return
	}
	for _, j := range ix.Queued {
		run, waited, ok := lastRun(j, s.Now)
		if ok && t.Queue(j) > 0 && float64(waited) > t.opts.StarveLimit*float64(run) {
			t.base[j.ID] = j.Attained
		}
	}
}

// Schedule decides one cycle.
func (t *Tiresias) Schedule(s *sched.Snapshot) sched.Decisions {
	// 1. Plan; promote starving jobs.
	p := t.scratch.NewPlan(s)
	t.promote(s, p.Index)
	// 2. Queue: queue index, then arrival.
	t.queue = t.sorter.Sort(t.queue, p.Index.Queued, t.queueKey)
	queue := t.queue
	// 3. Victims: the reverse of the same order.
	t.cands = t.sorter.Sort(t.cands, p.Index.Running, t.queueKey)
	cands := t.cands
	slices.Reverse(cands)
	// 4. Start, preempting jobs of lower queues.
	d := sched.Preemptive{
		Queue:      queue,
		Candidates: cands,
		CanPreempt: func(q, v *sched.Job) bool { return t.Queue(v) > t.Queue(q) },
		Class:      t.Queue,
		Mode:       sched.SuspendNow,
		Reason:     Reason,
	}.Run(p)
	// 5. When to look again without an event.
	t.wake = t.nextWake(s, p.Index, &d)
	return d
}

// NextWake implements sched.Waker: the earliest time after the last cycle at which a job
// that holds GPUs crosses a queue threshold (its queue, hence the victims and their order,
// change) or, with StarveLimit, a waiting job is promoted, while a job waits; zero if no job
// is left waiting.
func (t *Tiresias) NextWake() time.Time { return t.wake }

// nextWake computes NextWake after decisions d on snapshot s. Attained service grows with
// time only for jobs that hold GPUs, at their GPU count: those running now and those d
// starts (from s.Now on). Waiting jobs' queues change only by promotion.
func (t *Tiresias) nextWake(s *sched.Snapshot, ix *sched.Index, d *sched.Decisions) time.Time {
	started := make(map[string]int32, len(d.Starts)) // GPUs of each job started
	for _, st := range d.Starts {
		started[st.JobID] = sched.PlacementGPUs(st.Placement)
	}
	var wake time.Time
	earliest := func(at time.Time) {
		if at.After(s.Now) && (wake.IsZero() || at.Before(wake)) {
			wake = at
		}
	}
	waiting := false
	for _, j := range ix.Queued {
		if _, ok := started[j.ID]; ok {
			continue
		}
		waiting = true
		if t.opts.StarveLimit <= 0 || t.Queue(j) == 0 {
			continue
		}
		if run, waited, ok := lastRun(j, s.Now); ok {
			earliest(s.Now.Add(time.Duration(t.opts.StarveLimit*float64(run)) - waited + 1))
		}
	}
	if !waiting {
		return time.Time{}
	}
	cross := func(j *sched.Job, gpus int32) {
		q := t.Queue(j)
		if q >= len(t.opts.Thresholds) || gpus <= 0 {
			return
		}
		left := t.opts.Thresholds[q] - (j.Attained - t.base[j.ID])
		g := time.Duration(gpus)
		earliest(s.Now.Add((left + g - 1) / g))
	}
	for _, j := range ix.Running {
		cross(j, j.GPUs())
	}
	for _, j := range ix.Queued {
		if g, ok := started[j.ID]; ok {
			cross(j, g)
		}
	}
	return wake
}
