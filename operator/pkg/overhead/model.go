package overhead

import (
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Params are the overhead parameters of one model (or of the cluster).
type Params struct {
	// Start is container start plus data-pipeline warm-up, before the checkpoint load.
	Start time.Duration
	// WriteBW and ReadBW are the checkpoint storage bandwidths in bytes per second.
	WriteBW, ReadBW float64
	// Grace is the termination grace period of an immediate suspend.
	Grace time.Duration
}

// DefaultParams are used until the model has observed anything: 50 s start and warm-up,
// 500 MB/s checkpoint writes, 1 GB/s reads, a 30 s grace period (Kubernetes' default
// terminationGracePeriodSeconds).
func DefaultParams() Params {
	return Params{Start: 50 * time.Second, WriteBW: 500e6, ReadBW: 1e9, Grace: 30 * time.Second}
}

// learned accumulates observations of one scope (a model, or the cluster).
type learned struct {
	startSum      time.Duration
	startN        int
	writeBytes    float64
	writeSecs     float64
	readBytes     float64
	readSecs      float64
	grace         time.Duration
	graceObserved bool
}

// jobObs is what one job showed of itself.
type jobObs struct {
	model string
	// start is the job's observed first-start overhead, 0 if unknown.
	start time.Duration
	// resume is the job's last observed resume overhead, 0 if never resumed.
	resume time.Duration
	// epochAt is the time of the job's latest epoch end.
	epochAt time.Time
	// expect is the overhead predicted at the job's pending preemption.
	expect *expectation
}

type expectation struct {
	mode    sched.SuspendMode
	delay   time.Duration
	resume  time.Duration
	decided time.Time
}

// Model learns overhead parameters and predicts overheads. It is not safe for concurrent
// use (the policy that owns it serializes Observe and Schedule).
type Model struct {
	defaults Params
	global   learned
	models   map[string]*learned
	jobs     map[string]*jobObs
	scores   []Score
}

var _ sched.Observer = (*Model)(nil)

// New returns a model that starts from defaults.
func New(defaults Params) *Model {
	return &Model{defaults: defaults, models: map[string]*learned{}, jobs: map[string]*jobObs{}}
}

// Params returns the current parameters of a model: what the model's own observations
// show, else what the cluster's show, else the defaults, field by field.
func (m *Model) Params(model string) Params {
	p := m.defaults
	for _, l := range []*learned{&m.global, m.models[model]} {
		if l == nil {
			continue
		}
		if l.startN > 0 {
			p.Start = l.startSum / time.Duration(l.startN)
		}
		if l.writeSecs > 0 {
			p.WriteBW = l.writeBytes / l.writeSecs
		}
		if l.readSecs > 0 {
			p.ReadBW = l.readBytes / l.readSecs
		}
		if l.graceObserved {
			p.Grace = l.grace
		}
	}
	return p
}

func (m *Model) scopes(model string) []*learned {
	l := m.models[model]
	if l == nil {
		l = &learned{}
		m.models[model] = l
	}
	return []*learned{&m.global, l}
}

func (m *Model) job(j *sched.Job) *jobObs {
	o := m.jobs[j.ID]
	if o == nil {
		o = &jobObs{model: j.Model}
		m.jobs[j.ID] = o
	}
	return o
}

// Estimate is the overhead of preempting one running job now.
type Estimate struct {
	// Into is f, the work done since the last checkpoint.
	Into time.Duration
	// ToBoundary is the time until the current epoch ends, T - f.
	ToBoundary time.Duration
	// Write is the checkpoint write time of a boundary suspend.
	Write time.Duration
	// Grace is the grace period of an immediate suspend.
	Grace time.Duration
	// Resume is the time from readmission until the job makes progress again.
	Resume time.Duration
	// AtCheckpoint: the job has done nothing since its last checkpoint (it is warming up
	// or exactly at an epoch end), so a boundary suspend frees its GPUs at once and writes
	// nothing.
	AtCheckpoint bool
	// Finishes: the current epoch is the job's last, so a boundary suspend is a finish.
	Finishes bool
}

// BoundaryDelay is s_v: the time until a boundary suspend frees the GPUs.
func (e Estimate) BoundaryDelay() time.Duration {
	if e.AtCheckpoint {
		return 0
	}
	if e.Finishes {
		return e.ToBoundary
	}
	return e.ToBoundary + e.Write
}

// Delay is the time until the GPUs are free in the given mode.
func (e Estimate) Delay(mode sched.SuspendMode) time.Duration {
	if mode == sched.SuspendNow {
		return e.Grace
	}
	return e.BoundaryDelay()
}

// Lost is the work thrown away in the given mode (time at the job's allocation).
func (e Estimate) Lost(mode sched.SuspendMode) time.Duration {
	if mode == sched.SuspendNow {
		return e.Into
	}
	return 0
}

// Choose picks the cheaper suspend mode: boundary when the rest of the epoch plus the
// checkpoint write costs no more than the work an immediate suspend throws away plus the
// grace period; immediate otherwise. Both sides are times: the boundary side delays the
// waiting job, the immediate side is redone by the victim and waited by the waiting job.
func (e Estimate) Choose() sched.SuspendMode {
	if e.BoundaryDelay() <= e.Into+e.Grace {
		return sched.SuspendBoundary
	}
	return sched.SuspendNow
}

// Estimate predicts the overhead of preempting running job j at time now, given its
// predicted epoch time.
func (m *Model) Estimate(j *sched.Job, epochTime time.Duration, now time.Time) Estimate {
	p := m.Params(j.Model)
	e := Estimate{Grace: p.Grace, Into: j.SinceCheckpoint}
	if now.Before(j.WarmUntil) || j.SinceCheckpoint <= 0 {
		e.Into, e.AtCheckpoint = 0, true
	}
	if epochTime > 0 {
		e.ToBoundary = epochTime - e.Into
		if e.ToBoundary < 0 {
			e.ToBoundary = 0
		}
	}
	if j.Epochs > 0 && j.EpochsDone >= j.Epochs-1 {
		e.Finishes = true
	}
	e.Write = Transfer(j.CheckpointBytes, p.WriteBW, 1)
	o := m.jobs[j.ID]
	switch {
	case o != nil && o.resume > 0:
		e.Resume = o.resume
	case o != nil && o.start > 0:
		e.Resume = o.start + Transfer(j.CheckpointBytes, p.ReadBW, 1)
	default:
		e.Resume = p.Start + Transfer(j.CheckpointBytes, p.ReadBW, 1)
	}
	return e
}

// Transfer is the time to move bytes at bandwidth bytes per second, times factor (a noise
// factor in the simulator and the testbed agent; 1 here).
func Transfer(bytes int64, bandwidth, factor float64) time.Duration {
	if bytes <= 0 || bandwidth <= 0 {
		return 0
	}
	return time.Duration(float64(bytes) / bandwidth * factor * float64(time.Second))
}

// Expect records the overhead predicted for a preemption decided now, to be scored when
// the suspend and the following resume are observed.
func (m *Model) Expect(j *sched.Job, mode sched.SuspendMode, e Estimate, now time.Time) {
	m.job(j).expect = &expectation{mode: mode, delay: e.Delay(mode), resume: e.Resume, decided: now}
}

// Observe implements sched.Observer.
func (m *Model) Observe(ev sched.Event) {
	j := ev.Job
	if j == nil {
		return
	}
	switch ev.Kind {
	case sched.EventStarted:
		o := m.job(j)
		ov := j.WarmUntil.Sub(j.LastStart)
		if o.start == 0 && ov > 0 && j.LastStart.Equal(j.FirstStart) {
			o.start = ov
			for _, l := range m.scopes(j.Model) {
				l.startSum += ov
				l.startN++
			}
		}
	case sched.EventEpoch:
		m.job(j).epochAt = ev.Time
	case sched.EventSuspended:
		m.suspended(j, ev)
	case sched.EventResumed:
		m.resumed(j, ev)
	case sched.EventFinished:
		delete(m.jobs, j.ID)
	}
}

func (m *Model) suspended(j *sched.Job, ev sched.Event) {
	o := m.job(j)
	mode := sched.SuspendBoundary
	var decided time.Time
	if o.expect != nil {
		mode, decided = o.expect.mode, o.expect.decided
	} else if j.Suspend != nil {
		mode, decided = j.Suspend.Mode, j.Suspend.Decided
	} else {
		decided = ev.Time.Add(-ev.Duration)
	}
	switch mode {
	case sched.SuspendNow:
		for _, l := range m.scopes(j.Model) {
			l.grace, l.graceObserved = ev.Duration, true
		}
	default:
		// The checkpoint write runs from the epoch end the job reached after the decision
		// to the GPUs being free.
		if !o.epochAt.IsZero() && o.epochAt.After(decided) && j.CheckpointBytes > 0 {
			if w := ev.Time.Sub(o.epochAt); w > 0 {
				for _, l := range m.scopes(j.Model) {
					l.writeBytes += float64(j.CheckpointBytes)
					l.writeSecs += w.Seconds()
				}
			}
		}
	}
	if x := o.expect; x != nil {
		m.score(j, KindSuspend, x.mode, x.delay, ev.Duration)
		x.delay = -1 // scored
	}
}

func (m *Model) resumed(j *sched.Job, ev sched.Event) {
	o := m.job(j)
	if ev.Duration <= 0 {
		return
	}
	if o.start > 0 && j.CheckpointBytes > 0 {
		if load := ev.Duration - o.start; load > 0 {
			for _, l := range m.scopes(j.Model) {
				l.readBytes += float64(j.CheckpointBytes)
				l.readSecs += load.Seconds()
			}
		}
	}
	if x := o.expect; x != nil {
		m.score(j, KindResume, x.mode, x.resume, ev.Duration)
		o.expect = nil
	}
	o.resume = ev.Duration
}
