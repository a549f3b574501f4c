package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/physics"
)

// observe reports an event at the current time to an observing policy.
func (e *Engine) observe(kind sched.EventKind, j *job, d time.Duration, bytes int64) {
	if e.observer == nil {
		return
	}
	e.observer.Observe(sched.Event{Kind: kind, Time: Epoch.Add(e.now), Job: &j.s, Duration: d, Bytes: bytes})
}

// advance reports, for every job that made progress since its last report, the epochs it
// completed (one EventEpoch at the latest epoch end) and its read traffic over the window
// (EventTraffic: dataset bytes x fraction of an epoch done x noise). Windows without
// progress (warm-up, grace period) are not reported. Events go out in time order.
func (e *Engine) advance(t time.Duration) {
	if e.observer == nil {
		return
	}
	// Every traffic report is at t and an epoch ends at or before t, so the reports are in
	// time order once the few epoch reports are sorted and put first; an epoch that ends at
	// t itself (or, by rounding, after it) falls back to one stable sort of all reports in
	// the order they were made, which is the order the fast path gives otherwise.
	e.progress, e.epochs = e.progress[:0], e.epochs[:0]
	at := Epoch.Add(t)
	late := false
	for _, j := range e.holders {
		if t <= j.reportedT {
			continue
		}
		p := j.progressAt(t)
		dp := p - j.reportedP
		if dp <= 0 {
			continue
		}
		j.refresh(t)
		if e1, e2 := j.epochsAt(j.reportedP), j.epochsAt(p); e2 > e1 {
			ev := sched.Event{
				Kind: sched.EventEpoch, Time: Epoch.Add(j.timeToReach(j.epochEnd(e2))), Job: &j.s,
				Duration: j.elapsed(j.epochLen), Bytes: int64(float64(j.s.DatasetBytes) * j.nTraffic),
			}
			late = late || !ev.Time.Before(at)
			e.epochs = append(e.epochs, epochReport{ev: ev, before: len(e.progress)})
		}
		from := max(j.reportedT, j.runFrom)
		e.progress = append(e.progress, sched.Event{
			Kind: sched.EventTraffic, Time: at, Job: &j.s, Duration: t - from,
			Bytes: int64(float64(j.s.DatasetBytes) * float64(dp) / float64(j.epochLen) * j.nTraffic),
		})
		j.reportedP, j.reportedT = p, t
	}
	if late {
		e.merged = e.merged[:0]
		k := 0
		for i, ev := range e.progress {
			for ; k < len(e.epochs) && e.epochs[k].before == i; k++ {
				e.merged = append(e.merged, e.epochs[k].ev)
			}
			e.merged = append(e.merged, ev)
		}
		slices.SortStableFunc(e.merged, func(a, b sched.Event) int { return a.Time.Compare(b.Time) })
		for _, ev := range e.merged {
			e.observer.Observe(ev)
		}
		return
	}
	slices.SortStableFunc(e.epochs, func(a, b epochReport) int { return a.ev.Time.Compare(b.ev.Time) })
	for _, r := range e.epochs {
		e.observer.Observe(r.ev)
	}
	for _, ev := range e.progress {
		e.observer.Observe(ev)
	}
}

// epochReport is an epoch report of advance and the number of traffic reports made
// before it.
type epochReport struct {
	ev     sched.Event
	before int
}

// handle applies one heap event.
func (e *Engine) handle(ev *event) error {
	j := ev.job
	switch ev.kind {
	case evFinish:
		if ev.gen != j.gen {
			return nil
		}
		return e.finish(j, ev.at)
	case evFree:
		if ev.gen != j.gen || j.finished {
			return nil
		}
		e.free(j, ev.at)
	case evWarm:
		if ev.gen != j.gen || j.finished || j.warmReported {
			return nil
		}
		j.warmReported = true
		e.observe(sched.EventResumed, j, j.warmUntil-j.lastStart, 0)
	case evReservationTimeout:
		if ev.gen == j.resGen && j.s.Reserved != nil && j.s.Phase == sched.Queued {
			e.release(j)
		}
	}
	return nil
}

// hold adds (sign 1) or removes (sign -1) a placement from the nodes' used GPUs.
func (e *Engine) hold(slots []sched.Slot, sign int32) {
	for _, s := range slots {
		n := &e.nodes[e.nodeIndex[s.Node]]
		n.Used += sign * s.GPUs
		e.used += sign * s.GPUs
	}
}

// start admits a queued job: first start or resume from its last checkpoint.
func (e *Engine) start(j *job, t time.Duration, placement []sched.Slot) {
	resume := !j.s.FirstStart.IsZero()
	if j.s.Reserved != nil {
		e.release(j)
	}
	ov := j.startOverhead(&e.cfg.Physics, resume)
	var workers int32
	for _, sl := range placement {
		workers += sl.Workers
	}
	if workers != j.s.Workers {
		// An elastic job (re)starts at another size: its epoch time is observed anew.
		j.s.Workers, j.s.EpochTime = workers, 0
	}
	j.rate = physics.Speed(workers, j.baseWorkers, e.cfg.Physics.Serial)
	if j.rate != 1 {
		j.varied = true
	}
	j.gen++
	j.resumed, j.warmReported = resume, false
	j.lastStart, j.warmUntil, j.runFrom = t, t+ov, t+ov
	j.segStart = t
	j.p0, j.limit = j.ckpt, j.work
	j.reportedP, j.reportedT = j.p0, t
	j.s.Phase = sched.Running
	j.s.Placement = slices.Clone(placement)
	j.s.LastStart, j.s.WarmUntil = Epoch.Add(t), Epoch.Add(t+ov)
	if !resume {
		j.s.FirstStart = Epoch.Add(t)
		j.rec.FirstStart = t
	}
	j.s.SinceCheckpoint = 0
	e.hold(placement, 1)
	e.queued--
	e.holding++
	e.addHolder(j)
	e.q.push(event{at: j.runFrom + j.elapsed(j.work-j.p0) + e.cfg.Physics.FinishDelay, kind: evFinish, job: j, gen: j.gen})
	e.observe(sched.EventStarted, j, 0, 0)
	if resume && e.observer != nil {
		if ov > 0 {
			e.q.push(event{at: j.warmUntil, kind: evWarm, job: j, gen: j.gen})
		} else {
			j.warmReported = true
			e.observe(sched.EventResumed, j, 0, 0)
		}
	}
}

// preempt decides a suspend of a running job (docs/simulator.md). Boundary: the job runs on
// to the end of its current epoch, writes its checkpoint and frees its GPUs (at once if it
// is exactly at a checkpoint; if the boundary is the job's end it simply finishes). Now:
// the job stops, loses the work since its last checkpoint, and frees its GPUs after the
// grace period. Either frees its GPUs SuspendDelay later still, the control plane's part.
// Ideal: the job stops at once and loses nothing. A resize (p.Resize) is a
// boundary suspend after which the job is queued with the new placement reserved for it;
// a grow promises the added GPUs now.
func (e *Engine) preempt(j *job, t time.Duration, p sched.Preemption) {
	ph := &e.cfg.Physics
	prog := j.progressAt(t)
	j.decided = t
	finishing := false
	switch {
	case prog >= j.work:
		// Trained: only the control plane's finish (FinishDelay) is left.
		finishing = true
		j.freeAt = j.timeToReach(j.work) + ph.FinishDelay
	case ph.Ideal:
		j.limit, j.ckpt, j.stopAt, j.freeAt = prog, prog, t, t
	case p.Mode == sched.SuspendNow:
		c := j.checkpointFloor(prog)
		j.rec.RedoneWork += j.elapsed(prog - c)
		j.limit, j.ckpt, j.stopAt, j.freeAt = prog, c, t, t+ph.Grace
	default:
		if c := j.checkpointFloor(prog); c == prog {
			j.limit, j.ckpt, j.stopAt, j.freeAt = prog, prog, t, t
			break
		}
		b := j.boundaryAfter(prog)
		if b >= j.work {
			finishing = true
			j.freeAt = j.timeToReach(j.work) + ph.FinishDelay
			break
		}
		reach := j.timeToReach(b)
		j.limit, j.ckpt, j.stopAt, j.freeAt = b, b, reach, reach+j.writeTime(ph)
	}
	if !finishing && !ph.Ideal {
		j.freeAt += ph.SuspendDelay
	}
	j.s.Phase = sched.Suspending
	j.s.Suspend = &sched.SuspendState{Mode: p.Mode, For: p.For, Decided: Epoch.Add(t), FreeAt: Epoch.Add(j.freeAt)}
	if p.Resize != nil {
		j.s.Suspend.Resize = slices.Clone(p.Resize)
		j.rec.GPUTime += (t - j.segStart) * time.Duration(sched.PlacementGPUs(j.s.Placement))
		j.segStart = t
		e.hold(sched.Added(j.s.Placement, p.Resize), 1)
		j.s.Placement = sched.Union(j.s.Placement, p.Resize)
	}
	if finishing {
		return
	}
	j.gen++
	e.q.push(event{at: j.freeAt, kind: evFree, job: j, gen: j.gen})
}

// endAdmission accounts for the admission that ends at t (GPUs freed or job finished),
// with progress having stopped at stop.
func (j *job) endAdmission(t, stop time.Duration) {
	warm := min(stop, j.warmUntil) - j.lastStart
	if warm < 0 {
		warm = 0
	}
	if j.resumed {
		j.rec.ResumeOverhead += warm
	} else {
		j.rec.StartOverhead += warm
	}
	held := t - j.lastStart
	j.productive += max(0, stop-j.runFrom)
	j.rec.Held += held
	j.rec.GPUTime += (t - j.segStart) * time.Duration(sched.PlacementGPUs(j.s.Placement))
	j.attainedBase += held * time.Duration(j.s.GPUs())
	j.s.Attained = j.attainedBase
}

// free completes a suspend: the GPUs are free and the job waits to resume.
func (e *Engine) free(j *job, t time.Duration) {
	j.endAdmission(t, j.stopAt)
	j.rec.SuspendWait += t - j.stopAt
	j.rec.SuspendDelay += t - j.decided
	resize := j.s.Resizing()
	var target []sched.Slot
	if resize {
		target = j.s.Suspend.Resize
		j.rec.Resizes++
	} else {
		j.rec.Preemptions++
		j.s.Preemptions++
	}
	e.hold(j.s.Placement, -1)
	e.holding--
	e.dropHolder(j)
	e.queued++
	j.s.Phase = sched.Queued
	j.s.Placement, j.s.Suspend = nil, nil
	j.s.EpochsDone = j.epochsAt(j.ckpt)
	j.s.SinceCheckpoint = 0
	j.s.Oracle.Remaining = j.elapsed(j.work - j.ckpt)
	if resize {
		// The job continues at its new size: the placement is reserved for it, and the
		// policy's AdmitReserved restarts it there in the cycle that follows.
		e.reserve(j, t, target)
	}
	e.observe(sched.EventSuspended, j, t-j.decided, 0)
}

// finish completes a job.
func (e *Engine) finish(j *job, t time.Duration) error {
	if j.finished {
		return fmt.Errorf("sim: job %s ended twice (at %v)", j.s.ID, t)
	}
	j.endAdmission(t, t-e.cfg.Physics.FinishDelay) // progress stopped when training ended
	j.rec.Finish = t
	j.finished = true
	e.finished.Add(1)
	e.hold(j.s.Placement, -1)
	e.holding--
	e.dropHolder(j)
	e.ended = true
	j.s.Phase = sched.Finished
	j.s.Suspend = nil
	j.s.EpochsDone, j.s.SinceCheckpoint, j.s.Oracle.Remaining = j.epochs, 0, 0
	e.observe(sched.EventFinished, j, j.rec.Held, 0)
	return nil
}

// reserve holds GPUs for a queued job. A new reservation replaces the job's previous one
// but keeps its timeout, which runs from the job's first reservation.
func (e *Engine) reserve(j *job, t time.Duration, slots []sched.Slot) {
	had := j.s.Reserved != nil
	j.s.Reserved = slices.Clone(slots)
	if !had {
		e.reservations++
		j.resGen++
		j.resAt = t
		e.q.push(event{at: t + e.cfg.ReservationTimeout, kind: evReservationTimeout, job: j, gen: j.resGen})
	}
}

// release drops a job's reservation.
func (e *Engine) release(j *job) {
	e.reservations--
	j.s.Reserved = nil
	j.resGen++
}
