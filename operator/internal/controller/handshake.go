package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/internal/scheduler"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// HandshakeReconciler carries out preemptions (docs/operator.md). For a Preempting
// Allocation it puts the checkpoint request on every pod of the job, waits until every live
// pod has acknowledged that request id or the deadline has passed, records the resume epoch
// and sets the Allocation Suspended, and only then suspends the job. A Suspended Allocation
// keeps its placement until no pod of the job is left (read from the API server, not the
// cache); then it goes back to Queued and its GPUs are free.
type HandshakeReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Reader lists a suspended job's pods from the API server directly: its GPUs are free
	// only once no pod of it is left.
	Reader   client.Reader
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Metrics  *metrics.Metrics
	// Inbox takes the events the reconciler observes and its requests for a cycle.
	Inbox *scheduler.Inbox
	// Workers is how many Allocations are handled at once (each by one worker at a time): a
	// cycle that preempts many jobs hands them all over at once, and each handshake step is a
	// few API calls.
	Workers int
}

// SetupWithManager watches Allocations and the pods that carry an Allocation label.
func (r *HandshakeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("handshake").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&v1alpha1.Allocation{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToAllocation)).
		Complete(r)
}

func podToAllocation(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[v1alpha1.LabelAllocation]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// Reconcile implements reconcile.Reconciler.
func (r *HandshakeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a := &v1alpha1.Allocation{}
	if err := r.Client.Get(ctx, req.NamespacedName, a); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch a.Status.Phase {
	case v1alpha1.AllocationPreempting:
		return r.preempting(ctx, a)
	case v1alpha1.AllocationSuspended:
		return r.suspended(ctx, a)
	}
	return ctrl.Result{}, nil
}

// RequestPods puts the Allocation's checkpoint request on every live pod of its job that
// does not carry that request id yet. Repeating it is a no-op.
func (r *HandshakeReconciler) RequestPods(ctx context.Context, a *v1alpha1.Allocation, pods []*corev1.Pod) error {
	c := a.Status.Checkpoint
	if c == nil {
		return nil
	}
	mode := agentv1alpha1.ModeBoundary
	if c.Mode == v1alpha1.SuspendNow {
		mode = agentv1alpha1.ModeNow
	}
	val, err := json.Marshal(agentv1alpha1.CheckpointRequest{ID: c.ID, Mode: mode, Deadline: c.Deadline.UTC()})
	if err != nil {
		return err
	}
	for _, p := range pods {
		if !allocation.Live(p) {
			continue
		}
		var cur agentv1alpha1.CheckpointRequest
		if v, ok := p.Annotations[agentv1alpha1.AnnotationCheckpointRequest]; ok && json.Unmarshal([]byte(v), &cur) == nil && cur.ID == c.ID {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(val)}}})
		if err := r.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// ackOf returns the pod's acknowledgement of request id, if any. An acknowledgement outside
// the contract's bounds (agentv1alpha1.CheckpointAck.Validate) counts as none: the pod is
// waited for until the deadline.
func ackOf(p *corev1.Pod, id string) (agentv1alpha1.CheckpointAck, bool) {
	v, ok := p.Annotations[agentv1alpha1.AnnotationCheckpointAck]
	if !ok {
		return agentv1alpha1.CheckpointAck{}, false
	}
	var ack agentv1alpha1.CheckpointAck
	if json.Unmarshal([]byte(v), &ack) != nil || ack.RequestID != id || ack.Validate() != nil {
		return agentv1alpha1.CheckpointAck{}, false
	}
	return ack, true
}

func (r *HandshakeReconciler) preempting(ctx context.Context, a *v1alpha1.Allocation) (ctrl.Result, error) {
	c := a.Status.Checkpoint
	now := now(r.Clock)
	if c == nil {
		// Not expected: a Preempting Allocation always has a request. Suspend now.
		c = &v1alpha1.CheckpointRequest{ID: fmt.Sprintf("%s-%d", a.UID, a.Status.Preemptions), Mode: v1alpha1.SuspendNow, Deadline: now, Requested: now}
		a.Status.Checkpoint = c
	}
	pods, err := allocation.PodsOf(ctx, r.Client, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.RequestPods(ctx, a, pods); err != nil {
		return ctrl.Result{}, err
	}
	acked, waiting, unstarted := 0, 0, 0
	resume := int32(-1)
	path := ""
	for _, p := range pods {
		if !allocation.Live(p) {
			continue
		}
		ack, ok := ackOf(p, c.ID)
		if !ok && !allocation.Started(p) {
			// Not bound or not yet running: nothing trained since the job's last start, so
			// nothing to wait for. The job resumes from its resume epoch.
			unstarted++
			continue
		}
		if !ok {
			waiting++
			if prog := allocation.ReadProgress([]*corev1.Pod{p}); resume < 0 || prog.EpochsDone < resume {
				resume = prog.EpochsDone
			}
			continue
		}
		acked++
		if resume < 0 || ack.Epoch < resume {
			resume, path = ack.Epoch, ack.Path
		}
	}
	expired := !now.Before(&c.Deadline)
	if waiting > 0 && !expired {
		return ctrl.Result{RequeueAfter: c.Deadline.Sub(now.Time)}, nil
	}

	// 1. Record the outcome on the Allocation.
	outcome := "Acknowledged"
	msg := fmt.Sprintf("%d of %d pods acknowledged checkpoint request %s", acked, acked+waiting+unstarted, c.ID)
	switch {
	case waiting > 0:
		outcome = "DeadlineExceeded"
	case acked == 0 && unstarted > 0:
		outcome = "NotStarted"
	}
	if unstarted > 0 {
		msg += fmt.Sprintf("; %d had not started", unstarted)
	}
	// The job resumes from the oldest checkpoint of the gang: the least epoch the
	// acknowledgements name, or, past the deadline, the least epoch a silent pod reported
	// complete (the agent checkpoints at epoch ends). It never goes back, nor past the job's
	// own epochs.
	resume = allocation.WithinEpochs(a, resume)
	if resume > a.Status.ResumeEpoch {
		a.Status.ResumeEpoch, a.Status.ResumePath = resume, path
	}
	allocation.SetPhase(a, v1alpha1.AllocationSuspended, outcome, msg, now)
	if err := r.Client.Status().Update(ctx, a); err != nil {
		return ctrl.Result{}, err
	}
	r.Metrics.HandshakeDuration.WithLabelValues(outcome).Observe(now.Sub(c.Requested.Time).Seconds())
	job, err := allocation.JobOf(ctx, r.Client, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	if job != nil {
		allocation.RecordEvent(r.Recorder, job.Object(), a, corev1.EventTypeNormal, "Suspending", "Preempt", "%s; resumes from epoch %d", msg, a.Status.ResumeEpoch)
		// 2. Suspend the job; the training-operator deletes its pods.
		if err := suspendJob(ctx, r.Client, job); err != nil {
			return ctrl.Result{}, err
		}
	}
	log.FromContext(ctx).Info("checkpoint handshake done", "allocation", allocation.JobID(a), "outcome", outcome, "resumeEpoch", a.Status.ResumeEpoch)
	return ctrl.Result{}, nil
}

func (r *HandshakeReconciler) suspended(ctx context.Context, a *v1alpha1.Allocation) (ctrl.Result, error) {
	job, err := allocation.JobOf(ctx, r.Client, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	if job != nil {
		if err := suspendJob(ctx, r.Client, job); err != nil {
			return ctrl.Result{}, err
		}
	}
	// GPUs are free only when no pod of the job is left; the cache may not have seen a
	// recent pod yet, so ask the API server.
	pods, err := allocation.PodsOf(ctx, r.Reader, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(pods) > 0 {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	now := now(r.Clock)
	var decided time.Time
	if c := a.Status.Checkpoint; c != nil {
		decided = c.Requested.Time
	}
	if a.Status.LastAdmitted != nil {
		a.Status.AttainedGPUSeconds += int64(now.Sub(a.Status.LastAdmitted.Time).Seconds()) * int64(allocation.GPUs(a))
	}
	j := allocation.SchedJob(a, allocation.PodProgress{}, now.Time)
	var resize []v1alpha1.NodeAssignment
	if c := a.Status.Checkpoint; c != nil {
		resize = c.Resize
	}
	a.Status.Placement, a.Status.Checkpoint = nil, nil
	a.Status.LastStopped = &now
	a.Status.EpochsDone = max(a.Status.EpochsDone, a.Status.ResumeEpoch)
	reason, msg := "Preempted", fmt.Sprintf("suspended; resumes from epoch %d", a.Status.ResumeEpoch)
	if len(resize) > 0 {
		// A resize: the new placement is reserved for the job itself, and the next cycle
		// admits it there.
		a.Status.Reserved, a.Status.ReservedAt = resize, &now
		reason, msg = "Resized", fmt.Sprintf("checkpointed; restarts on %s from epoch %d", allocation.PlacementString(resize), a.Status.ResumeEpoch)
	}
	allocation.SetPhase(a, v1alpha1.AllocationQueued, reason, msg, now)
	if err := r.Client.Status().Update(ctx, a); err != nil {
		return ctrl.Result{}, err
	}
	if job != nil {
		if len(resize) > 0 {
			allocation.RecordEvent(r.Recorder, job.Object(), a, corev1.EventTypeNormal, "Suspended", "Resize", "pods gone; restarts on %s from epoch %d", allocation.PlacementString(resize), a.Status.ResumeEpoch)
		} else {
			allocation.RecordEvent(r.Recorder, job.Object(), a, corev1.EventTypeNormal, "Suspended", "Preempt", "pods gone, GPUs free; queued to resume from epoch %d", a.Status.ResumeEpoch)
		}
	}
	if j != nil && !decided.IsZero() {
		r.Inbox.Observe(sched.Event{Kind: sched.EventSuspended, Time: now.Time, Job: j, Duration: now.Sub(decided)})
	}
	r.Inbox.Trigger()
	return ctrl.Result{}, nil
}
