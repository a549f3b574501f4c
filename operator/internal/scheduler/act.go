package scheduler

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// write is one Allocation write that carries out a decision: prepared inside the cycle,
// sent after it returns.
type write struct {
	// job is the Allocation's job ID.
	job string
	// want is the Allocation as the write leaves it (at the resourceVersion it was decided
	// on): the snapshots taken while the write is in flight show it in place of the listed
	// Allocation.
	want *v1alpha1.Allocation
	// send carries the write out on a, a copy of want of its own.
	send func(ctx context.Context, a *v1alpha1.Allocation) error
}

// swap is what a batch that promises GPUs swaps into the fence before its first write.
type swap struct {
	// read is the fence as the cycle read it.
	read *fenceState
	// own are this scheduler's promises: the cycle's (mine) and those of its writes still in
	// flight; others are the other schedulers' promises it keeps.
	own, others, mine []promise
}

// batch is the writes of one cycle's decisions, in steps: reservations, then preemptions,
// then starts, then the expired reservations' removal. Each step's writes touch different
// Allocations, so they go out concurrently (WriteConcurrency at a time, shared by every
// batch in flight); the steps stay in order.
type batch struct {
	steps [][]*write
	done  chan struct{}
	err   error
}

// wait waits for the batch's writes to end and returns their errors (conflicts and missing
// Allocations left out: the next cycle decides again on fresh state).
func (b *batch) wait() error {
	<-b.done
	return b.err
}

// act carries out validated decisions and waits for the writes (see dispatch).
func (s *Scheduler) act(ctx context.Context, _ *sched.Snapshot, allocs map[string]*v1alpha1.Allocation, d sched.Decisions) error {
	return s.dispatch(ctx, allocs, d, nil).wait()
}

// dispatch prepares the writes that carry out decisions d, records them as in flight, and
// sends them in the background; it returns at once. A batch that promises GPUs first swaps
// sw into the fence; if another scheduler swapped since the cycle read it, nothing of the
// batch is written and the next cycle decides again. A
// decision whose Allocation changed since the snapshot fails on its resourceVersion and is
// dropped; the next cycle decides again on fresh state. Until a write ends, the snapshots
// show its Allocation as the write leaves it (inflight), so a later cycle never promises
// the same GPUs again; when a batch ends, the scheduler is woken to decide on its outcome.
func (s *Scheduler) dispatch(ctx context.Context, allocs map[string]*v1alpha1.Allocation, d sched.Decisions, sw *swap) *batch {
	b := &batch{done: make(chan struct{})}
	var step []*write
	add := func(w *write) {
		if w != nil {
			step = append(step, w)
		}
	}
	next := func() {
		if len(step) > 0 {
			b.steps = append(b.steps, step)
		}
		step = nil
	}
	// Reservations first: GPUs a victim frees are held for the job they were freed for
	// before any victim is asked to free them, so a crash between the writes never leaves
	// victims suspending for a job that holds nothing.
	touched := map[string]bool{}
	for _, r := range d.Reservations {
		touched[r.JobID] = true
		if a := allocs[r.JobID]; a != nil {
			add(s.planReserve(a.DeepCopy(), r.Placement))
		}
	}
	next()
	for _, p := range d.Preemptions {
		if a := allocs[p.JobID]; a != nil {
			add(s.planPreempt(a.DeepCopy(), p))
		}
	}
	next()
	for _, st := range d.Starts {
		touched[st.JobID] = true
		if a := allocs[st.JobID]; a != nil {
			add(s.planStart(a.DeepCopy(), st.Placement))
		}
	}
	next()
	for id, a := range allocs {
		if !touched[id] && reservationCleared(a) && !s.inflight.has(id) {
			add(s.planClearExpired(a.DeepCopy()))
		}
	}
	next()
	byJob := map[string][]promise{}
	var all []*write
	for _, st := range b.steps {
		all = append(all, st...)
	}
	var turn <-chan struct{}
	var swapped func()
	if sw != nil {
		for _, p := range sw.mine {
			byJob[p.Job] = append(byJob[p.Job], p)
		}
		// Swaps go out in the order of their cycles, each after the one before.
		turn, swapped = s.Fence.queue()
	}
	s.inflight.add(all, byJob)
	start := time.Now()
	s.inflight.batches.Add(1)
	go func() {
		defer s.inflight.batches.Done()
		defer close(b.done)
		var errs []error
		if sw != nil {
			<-turn
			t := time.Now()
			err := s.Fence.commit(ctx, sw.read, sw.own, sw.others)
			swapped()
			if s.inflight.waitingForSwap.Swap(false) {
				s.wakeUp()
			}
			s.Metrics.CycleStage.WithLabelValues("fence_swap").Observe(time.Since(t).Seconds())
			if err != nil {
				// Nothing of the batch is written: the next cycle decides again.
				for _, w := range all {
					s.inflight.end(w.job)
				}
				if apierrors.IsConflict(err) {
					s.Metrics.FencedCycles.Inc()
					log.FromContext(ctx).Info("another scheduler promised GPUs since this cycle's snapshot; deciding again", "fence", err.Error())
				} else {
					b.err = err
					if ctx.Err() == nil {
						log.FromContext(ctx).Error(err, "scheduler fence swap failed; nothing of the cycle's decisions written, the next cycle decides again")
					}
				}
				s.wakeUp()
				return
			}
		}
		for _, st := range b.steps {
			errs = append(errs, s.sendAll(ctx, st)...)
		}
		b.err = errors.Join(errs...)
		if b.err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(b.err, "allocation writes failed; the next cycle decides again")
		}
		if len(all) > 0 {
			s.Metrics.CycleStage.WithLabelValues("writes").Observe(time.Since(start).Seconds())
			s.wakeUp()
		}
	}()
	return b
}

// sendAll sends one step's writes concurrently and waits for them; each ends its in-flight
// record (after a successful write is recorded in Assumed, through the client).
func (s *Scheduler) sendAll(ctx context.Context, ws []*write) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, w := range ws {
		s.inflight.acquire(int(s.Config.WriteConcurrency))
		wg.Go(func() {
			defer s.inflight.release()
			err := w.send(ctx, w.want.DeepCopy())
			s.inflight.end(w.job)
			if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("allocation %s: %w", w.job, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// expireReservations clears reservations past their timeout when a cycle decided nothing.
func (s *Scheduler) expireReservations(ctx context.Context, _ *sched.Snapshot, allocs map[string]*v1alpha1.Allocation) error {
	var errs []error
	for id, a := range allocs {
		if !reservationCleared(a) || s.inflight.has(id) {
			continue
		}
		w := s.planClearExpired(a.DeepCopy())
		if err := w.send(ctx, w.want.DeepCopy()); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reservationCleared reports whether the snapshot dropped a's reservation as expired while
// the Allocation still records it: its removal is to be written.
func reservationCleared(a *v1alpha1.Allocation) bool {
	return a.Status.Phase == v1alpha1.AllocationQueued && a.Status.ReservedAt != nil && len(a.Status.Reserved) == 0
}

// planClearExpired prepares the removal of a reservation the snapshot dropped as expired.
func (s *Scheduler) planClearExpired(a *v1alpha1.Allocation) *write {
	a.Status.ReservedAt = nil
	return &write{job: allocation.JobID(a), want: a, send: func(ctx context.Context, a *v1alpha1.Allocation) error {
		return s.Client.Status().Update(ctx, a)
	}}
}

// planStart prepares a job's admission: the Allocation becomes Admitted with its placement
// (the promise of the GPUs is recorded before anything runs). The job controller then
// unsuspends the job with its resume point, and the binder binds its pods.
func (s *Scheduler) planStart(a *v1alpha1.Allocation, placement []sched.Slot) *write {
	now := metav1.NewTime(s.Clock.Now())
	resumed := a.Status.FirstAdmitted != nil
	waitedSince := a.CreationTimestamp
	if a.Status.LastStopped != nil {
		waitedSince = *a.Status.LastStopped
	}
	resized := false
	if w := allocation.SlotWorkers(placement); a.Spec.Elastic != nil && w != jobframework.PodCount(a.Spec.PodSets) {
		// An elastic job admitted at another size: its pod sets change first (the job's
		// replicas follow in SyncJob), so that the placement maps onto them.
		a.Spec.PodSets = allocation.ResizedSets(a, w)
		resized = true
	}
	a.Status.Placement = allocation.ToAssignments(a.Spec.PodSets, placement)
	a.Status.Reserved, a.Status.ReservedAt, a.Status.Checkpoint = nil, nil, nil
	if a.Status.FirstAdmitted == nil {
		a.Status.FirstAdmitted = &now
	}
	a.Status.LastAdmitted = &now
	reason, msg := "Started", "admitted"
	if resumed {
		reason, msg = "Resumed", fmt.Sprintf("admitted again, resumes from epoch %d", a.Status.ResumeEpoch)
	}
	allocation.SetPhase(a, v1alpha1.AllocationAdmitted, reason, msg, now)
	if resumed {
		allocation.SetCondition(a, v1alpha1.ConditionResumed, metav1.ConditionTrue, reason, msg, now)
	}
	return &write{job: allocation.JobID(a), want: a, send: func(ctx context.Context, a *v1alpha1.Allocation) error {
		if resized {
			status := a.Status
			if err := s.Client.Update(ctx, a); err != nil {
				return err
			}
			a.Status = status
			msg := fmt.Sprintf("restarts on %d pods", allocation.SlotWorkers(placement))
			if job, err := allocation.JobOf(ctx, s.Client, a); err == nil && job != nil {
				allocation.RecordEvent(s.Recorder, job.Object(), a, corev1.EventTypeNormal, "Resized", "Admit", "%s", msg)
			}
		}
		if err := s.Client.Status().Update(ctx, a); err != nil {
			return err
		}
		q := a.Spec.Queue
		if !resumed {
			s.Metrics.AdmissionLatency.WithLabelValues(q).Observe(now.Sub(a.CreationTimestamp.Time).Seconds())
		}
		s.Metrics.WaitingTime.WithLabelValues(q).Observe(now.Sub(waitedSince.Time).Seconds())
		s.Metrics.Admissions.WithLabelValues(q, fmt.Sprint(resumed)).Inc()
		if j := allocation.SchedJob(a, allocation.PodProgress{}, now.Time); j != nil {
			kind := sched.EventStarted
			if resumed {
				kind = sched.EventResumed
			}
			s.Inbox.Observe(sched.Event{Kind: kind, Time: now.Time, Job: j})
		}
		log.FromContext(ctx).Info("admitted", "allocation", allocation.JobID(a), "placement", allocation.PlacementString(a.Status.Placement), "resumed", resumed)
		return nil
	}}
}

// planPreempt prepares a preemption: the Allocation becomes Preempting with a checkpoint
// request (its id is derived from the Allocation, so repeating the decision never makes a
// second request). The handshake controller puts the request on the job's pods and does
// the rest.
func (s *Scheduler) planPreempt(a *v1alpha1.Allocation, p sched.Preemption) *write {
	if p.Mode == sched.SuspendNow {
		return s.planCheckpoint(a, p, v1alpha1.SuspendNow, s.Config.Checkpoint.NowDeadline.Duration)
	}
	return s.planCheckpoint(a, p, v1alpha1.SuspendBoundary, s.Config.Checkpoint.BoundaryDeadline.Duration)
}

// requestCheckpoint writes preemption p of a as a checkpoint request in mode, due deadline
// from now, and waits for the write.
func (s *Scheduler) requestCheckpoint(ctx context.Context, a *v1alpha1.Allocation, p sched.Preemption, mode v1alpha1.SuspendMode, deadline time.Duration) error {
	w := s.planCheckpoint(a.DeepCopy(), p, mode, deadline)
	return w.send(ctx, w.want.DeepCopy())
}

// planCheckpoint prepares preemption p of a as a checkpoint request in mode, due deadline
// from now (see planPreempt).
func (s *Scheduler) planCheckpoint(a *v1alpha1.Allocation, p sched.Preemption, mode v1alpha1.SuspendMode, deadline time.Duration) *write {
	now := metav1.NewTime(s.Clock.Now())
	resize := p.Resize != nil
	if resize {
		a.Status.Resizes++
	} else {
		a.Status.Preemptions++
	}
	a.Status.Checkpoint = &v1alpha1.CheckpointRequest{
		// Resizes after the first preemption count on from the preemptions, so that an ID
		// never repeats.
		ID:        checkpointID(a),
		Mode:      mode,
		Deadline:  metav1.NewTime(now.Add(deadline)),
		For:       p.For,
		Reason:    p.Reason,
		Requested: now,
	}
	msg := fmt.Sprintf("checkpoint requested (%s, %s), for %q", mode, p.Reason, p.For)
	if resize {
		// The placement after the checkpoint; a grow promises its added GPUs now.
		a.Status.Checkpoint.Resize = allocation.ToAssignments(allocation.ResizedSets(a, allocation.SlotWorkers(p.Resize)), p.Resize)
		held := sched.Union(allocation.ToSlots(a.Status.Placement), p.Resize)
		a.Status.Placement = allocation.ToAssignments(allocation.ResizedSets(a, allocation.SlotWorkers(held)), held)
		msg = fmt.Sprintf("checkpoint requested (%s, %s) to restart on %d pods (%s), for %q", mode, p.Reason,
			allocation.SlotWorkers(p.Resize), allocation.PlacementString(a.Status.Checkpoint.Resize), p.For)
	}
	allocation.SetPhase(a, v1alpha1.AllocationPreempting, nonEmpty(p.Reason, "Preempted"), msg, now)
	return &write{job: allocation.JobID(a), want: a, send: func(ctx context.Context, a *v1alpha1.Allocation) error {
		if err := s.Client.Status().Update(ctx, a); err != nil {
			return err
		}
		s.Metrics.Preemptions.WithLabelValues(string(mode), nonEmpty(p.Reason, "Unspecified")).Inc()
		log.FromContext(ctx).Info("preempting", "allocation", allocation.JobID(a), "mode", mode, "for", p.For, "reason", p.Reason)
		if job, err := allocation.JobOf(ctx, s.Client, a); err == nil && job != nil {
			allocation.RecordEvent(s.Recorder, job.Object(), a, corev1.EventTypeNormal, "Preempting", "Preempt", "%s", msg)
		}
		return nil
	}}
}

// checkpointID is the ID of an Allocation's next checkpoint request; it is derived from the
// Allocation, so repeating a decision never makes a second request.
func checkpointID(a *v1alpha1.Allocation) string {
	if a.Status.Resizes == 0 {
		return fmt.Sprintf("%s-%d", a.UID, a.Status.Preemptions)
	}
	return fmt.Sprintf("%s-%d-r%d", a.UID, a.Status.Preemptions, a.Status.Resizes)
}

// planReserve prepares the record of GPUs held for a queued job; nil if it holds them
// already.
func (s *Scheduler) planReserve(a *v1alpha1.Allocation, placement []sched.Slot) *write {
	as := allocation.ToAssignments(a.Spec.PodSets, placement)
	if reflect.DeepEqual(as, a.Status.Reserved) && a.Status.ReservedAt != nil {
		return nil
	}
	now := metav1.NewTime(s.Clock.Now())
	a.Status.Reserved, a.Status.ReservedAt = as, &now
	return &write{job: allocation.JobID(a), want: a, send: func(ctx context.Context, a *v1alpha1.Allocation) error {
		return s.Client.Status().Update(ctx, a)
	}}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
