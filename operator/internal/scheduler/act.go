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

// act carries out validated decisions: reservations, then preemptions, then starts. A
// decision whose Allocation changed since the snapshot fails on its resourceVersion and is
// skipped; the next cycle decides again on fresh state.
func (s *Scheduler) act(ctx context.Context, snap *sched.Snapshot, allocs map[string]*v1alpha1.Allocation, d sched.Decisions) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	keep := func(err error) {
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	// Each step's writes touch different Allocations and jobs, so they go out concurrently
	// (the configuration's writeConcurrency at a time): a cycle that starts hundreds of jobs is not paced by the API
	// server's latency. The steps stay in order.
	parallel := func(n int, f func(i int)) {
		sem := make(chan struct{}, max(1, int(s.Config.WriteConcurrency)))
		var wg sync.WaitGroup
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				f(i)
			})
		}
		wg.Wait()
	}
	// Reservations first: GPUs a victim frees are held for the job they were freed for
	// before any victim is asked to free them, so a crash between the writes never leaves
	// victims suspending for a job that holds nothing.
	reserved := map[string]bool{}
	for _, r := range d.Reservations {
		reserved[r.JobID] = true
	}
	parallel(len(d.Reservations), func(i int) {
		r := d.Reservations[i]
		if a := allocs[r.JobID]; a != nil {
			keep(s.reserve(ctx, a, r.Placement))
		}
	})
	parallel(len(d.Preemptions), func(i int) {
		p := d.Preemptions[i]
		if a := allocs[p.JobID]; a != nil {
			keep(s.preempt(ctx, a, p))
		}
	})
	started := map[string]bool{}
	for _, st := range d.Starts {
		started[st.JobID] = true
	}
	parallel(len(d.Starts), func(i int) {
		st := d.Starts[i]
		if a := allocs[st.JobID]; a != nil {
			keep(s.start(ctx, a, st.Placement))
		}
	})
	for id, a := range allocs {
		if !reserved[id] && !started[id] {
			keep(s.clearExpired(ctx, a))
		}
	}
	return errors.Join(errs...)
}

// expireReservations clears reservations past their timeout when a cycle decided nothing.
func (s *Scheduler) expireReservations(ctx context.Context, _ *sched.Snapshot, allocs map[string]*v1alpha1.Allocation) error {
	var errs []error
	for _, a := range allocs {
		if err := s.clearExpired(ctx, a); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// clearExpired writes the removal of a reservation the snapshot dropped as expired.
func (s *Scheduler) clearExpired(ctx context.Context, a *v1alpha1.Allocation) error {
	if a.Status.Phase != v1alpha1.AllocationQueued || a.Status.ReservedAt == nil || len(a.Status.Reserved) > 0 {
		return nil
	}
	a.Status.ReservedAt = nil
	return s.Client.Status().Update(ctx, a)
}

// start admits a job: the Allocation becomes Admitted with its placement (the promise of
// the GPUs is recorded before anything runs). The job controller then unsuspends the job
// with its resume point, and the binder binds its pods.
func (s *Scheduler) start(ctx context.Context, a *v1alpha1.Allocation, placement []sched.Slot) error {
	now := metav1.NewTime(s.Clock.Now())
	resumed := a.Status.FirstAdmitted != nil
	waitedSince := a.CreationTimestamp
	if a.Status.LastStopped != nil {
		waitedSince = *a.Status.LastStopped
	}
	if w := allocation.SlotWorkers(placement); a.Spec.Elastic != nil && w != jobframework.PodCount(a.Spec.PodSets) {
		// An elastic job admitted at another size: its pod sets change first (the job's
		// replicas follow in SyncJob), so that the placement maps onto them.
		a.Spec.PodSets = allocation.ResizedSets(a, w)
		status := a.Status
		if err := s.Client.Update(ctx, a); err != nil {
			return err
		}
		a.Status = status
		msg := fmt.Sprintf("restarts on %d pods", w)
		if job, err := allocation.JobOf(ctx, s.Client, a); err == nil && job != nil {
			allocation.RecordEvent(s.Recorder, job.Object(), a, corev1.EventTypeNormal, "Resized", "Admit", "%s", msg)
		}
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
}

// preempt starts a preemption: the Allocation becomes Preempting with a checkpoint request
// (its id is derived from the Allocation, so repeating the decision never makes a second
// request). The handshake controller puts the request on the job's pods and does the rest.
func (s *Scheduler) preempt(ctx context.Context, a *v1alpha1.Allocation, p sched.Preemption) error {
	if p.Mode == sched.SuspendNow {
		return s.requestCheckpoint(ctx, a, p, v1alpha1.SuspendNow, s.Config.Checkpoint.NowDeadline.Duration)
	}
	return s.requestCheckpoint(ctx, a, p, v1alpha1.SuspendBoundary, s.Config.Checkpoint.BoundaryDeadline.Duration)
}

// requestCheckpoint writes preemption p as a checkpoint request in mode, due deadline from
// now (see preempt).
func (s *Scheduler) requestCheckpoint(ctx context.Context, a *v1alpha1.Allocation, p sched.Preemption, mode v1alpha1.SuspendMode, deadline time.Duration) error {
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
	if err := s.Client.Status().Update(ctx, a); err != nil {
		return err
	}
	s.Metrics.Preemptions.WithLabelValues(string(mode), nonEmpty(p.Reason, "Unspecified")).Inc()
	log.FromContext(ctx).Info("preempting", "allocation", allocation.JobID(a), "mode", mode, "for", p.For, "reason", p.Reason)
	if job, err := allocation.JobOf(ctx, s.Client, a); err == nil && job != nil {
		allocation.RecordEvent(s.Recorder, job.Object(), a, corev1.EventTypeNormal, "Preempting", "Preempt", "%s", msg)
	}
	return nil
}

// checkpointID is the ID of an Allocation's next checkpoint request; it is derived from the
// Allocation, so repeating a decision never makes a second request.
func checkpointID(a *v1alpha1.Allocation) string {
	if a.Status.Resizes == 0 {
		return fmt.Sprintf("%s-%d", a.UID, a.Status.Preemptions)
	}
	return fmt.Sprintf("%s-%d-r%d", a.UID, a.Status.Preemptions, a.Status.Resizes)
}

// reserve records GPUs held for a queued job.
func (s *Scheduler) reserve(ctx context.Context, a *v1alpha1.Allocation, placement []sched.Slot) error {
	as := allocation.ToAssignments(a.Spec.PodSets, placement)
	if reflect.DeepEqual(as, a.Status.Reserved) && a.Status.ReservedAt != nil {
		return nil
	}
	now := metav1.NewTime(s.Clock.Now())
	a.Status.Reserved, a.Status.ReservedAt = as, &now
	return s.Client.Status().Update(ctx, a)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
