package controller

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/internal/scheduler"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/profile"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// JobReconciler keeps a managed job and its Allocation in step, through the job kind's
// adapter: it creates the Allocation (Queued) from the job, keeps the job suspended unless
// its Allocation is Admitted, unsuspends an Admitted job with its templates pointing at the
// placement's binder and its resume point, and marks the Allocation Finished when the job
// ends.
type JobReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Reader reads Allocations from the API server directly, before a job is suspended, so
	// that a stale cache never undoes an admission.
	Reader   client.Reader
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Config gives the queues, the GPU resource and the GPU product label.
	Config  *configv1.Configuration
	Metrics *metrics.Metrics
	// Profiles is the model-profile database; nil disables profile updates.
	Profiles profile.Store
	// SocketDir is the host directory of the agent's socket (agentv1alpha1.DefaultSocketDir if
	// empty).
	SocketDir string
	// Inbox takes the events the reconciler observes and its requests for a cycle.
	Inbox       *scheduler.Inbox
	Integration jobframework.Integration
	// Workers is how many jobs are reconciled at once (each job by one worker at a time);
	// at least 1.
	Workers int
}

// SetupWithManager registers the reconciler for its job kind; Allocation changes requeue the
// owning job.
func (r *JobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("job-"+r.Integration.GVK.Kind).
		For(r.Integration.NewObject(), builder.WithPredicates(predicate.NewPredicateFuncs(jobframework.Managed))).
		Watches(&v1alpha1.Allocation{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			a := obj.(*v1alpha1.Allocation)
			if a.Spec.Job.Kind != r.Integration.GVK.Kind {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Job.Name}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *JobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.Integration.NewObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !jobframework.Managed(obj) || obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	job := r.Integration.Wrap(obj)
	name := jobframework.AllocationName(r.Integration.GVK.Kind, obj.GetName())
	if err := jobframework.ResolveReferences(ctx, r.Client, job); err != nil {
		// Reading the job's runtime failed (not: it does not exist): try again.
		return ctrl.Result{}, err
	}
	spec, err := r.allocationSpec(ctx, job)
	if err != nil {
		allocation.RecordEvent(r.Recorder, obj, nil, corev1.EventTypeWarning, "InvalidJob", "Admit", "not admitted: %v", err)
		return ctrl.Result{}, suspendJob(ctx, r.Client, job)
	}

	a := &v1alpha1.Allocation{}
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, a)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.create(ctx, job, name, spec)
	case err != nil:
		return ctrl.Result{}, err
	}
	if a.Spec.Job.UID != "" && a.Spec.Job.UID != string(obj.GetUID()) {
		// An Allocation of an earlier job of the same name, not yet collected.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if a.Status.Phase == "" {
		return ctrl.Result{}, r.setQueued(ctx, job, a)
	}
	if a.Status.Phase == v1alpha1.AllocationFinished {
		return ctrl.Result{}, nil
	}
	if finished, ok := job.Finished(); finished {
		pods, err := allocation.PodsOf(ctx, r.Client, a)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(a.Status.Placement) > 0 {
			if running := notEnded(pods); running > 0 {
				// The job has ended but pods of it still hold GPUs (a Ray worker lives until
				// KubeRay deletes the cluster): keep the placement until they end.
				log.FromContext(ctx).V(1).Info("finished; waiting for its pods to end", "allocation", a.Name, "pods", running)
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
		}
		return ctrl.Result{}, r.finish(ctx, job, a, pods, ok)
	}
	keepElasticSize(a, &spec)
	if !reflect.DeepEqual(a.Spec, spec) && (a.Status.Phase == v1alpha1.AllocationQueued || reflect.DeepEqual(a.Spec.PodSets, spec.PodSets)) {
		a.Spec = spec
		if err := r.Client.Update(ctx, a); err != nil {
			return ctrl.Result{}, err
		}
		r.Inbox.Trigger()
	}
	return ctrl.Result{}, r.SyncJob(ctx, job, a)
}

// allocationSpec reads the Allocation spec from the job.
func (r *JobReconciler) allocationSpec(ctx context.Context, job jobframework.GenericJob) (v1alpha1.AllocationSpec, error) {
	obj := job.Object()
	qname := obj.GetLabels()[v1alpha1.LabelQueue]
	q, ok := r.queue(qname)
	if !ok {
		return v1alpha1.AllocationSpec{}, fmt.Errorf("unknown queue %q", qname)
	}
	sets, err := job.PodSets(r.Config.GPUResource, r.Config.GPUProductLabel)
	if err != nil {
		return v1alpha1.AllocationSpec{}, err
	}
	if _, _, _, err := jobframework.GangShape(sets); err != nil {
		return v1alpha1.AllocationSpec{}, err
	}
	h, err := jobframework.ReadHints(obj)
	if err != nil {
		return v1alpha1.AllocationSpec{}, err
	}
	prio := q.Priority
	for _, t := range job.PodTemplates() {
		if pc := t.Spec.PriorityClassName; pc != "" {
			var cls schedulingv1.PriorityClass
			if err := r.Client.Get(ctx, types.NamespacedName{Name: pc}, &cls); err != nil {
				return v1alpha1.AllocationSpec{}, fmt.Errorf("priority class %q: %w", pc, err)
			}
			prio = cls.Value
			break
		}
	}
	var elastic *v1alpha1.ElasticSpec
	if el, ok := job.(jobframework.Elastic); ok {
		set, lo, hi, ok, err := el.ElasticBounds()
		if err != nil {
			return v1alpha1.AllocationSpec{}, err
		}
		if ok {
			elastic = &v1alpha1.ElasticSpec{PodSet: set, MinCount: lo, MaxCount: hi}
			if v, ok := obj.GetAnnotations()[v1alpha1.AnnotationElasticReference]; ok {
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil || int32(n) < lo || int32(n) > hi {
					return v1alpha1.AllocationSpec{}, fmt.Errorf("annotation %s=%q: want a count from %d to %d", v1alpha1.AnnotationElasticReference, v, lo, hi)
				}
				elastic.ReferenceCount = int32(n)
			}
		}
	}
	gvk := job.GVK()
	return v1alpha1.AllocationSpec{
		Elastic:         elastic,
		Job:             v1alpha1.JobReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: obj.GetName(), UID: string(obj.GetUID())},
		Queue:           qname,
		Priority:        prio,
		Model:           h.Model,
		PodSets:         sets,
		Epochs:          h.Epochs,
		DatasetBytes:    h.DatasetBytes,
		CheckpointBytes: h.CheckpointBytes,
		EstimateSeconds: int64(h.Estimate / time.Second),
	}, nil
}

func (r *JobReconciler) create(ctx context.Context, job jobframework.GenericJob, name string, spec v1alpha1.AllocationSpec) error {
	obj := job.Object()
	a := &v1alpha1.Allocation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: obj.GetNamespace()}, Spec: spec}
	if err := controllerutil.SetControllerReference(obj, a, r.Scheme); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, a); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	log.FromContext(ctx).V(1).Info("allocation created", "allocation", name)
	if err := suspendJob(ctx, r.Client, job); err != nil {
		return err
	}
	return r.setQueued(ctx, job, a)
}

func (r *JobReconciler) setQueued(ctx context.Context, job jobframework.GenericJob, a *v1alpha1.Allocation) error {
	allocation.SetPhase(a, v1alpha1.AllocationQueued, "Submitted", "waiting for GPUs", now(r.Clock))
	if err := r.Client.Status().Update(ctx, a); err != nil {
		return err
	}
	allocation.RecordEvent(r.Recorder, job.Object(), a, corev1.EventTypeNormal, "Queued", "Queue", "queued in %s for %d GPUs", a.Spec.Queue, allocation.GPUs(a))
	if j := allocation.SchedJob(a, allocation.PodProgress{}, r.Clock.Now()); j != nil {
		r.Inbox.Observe(sched.Event{Kind: sched.EventSubmitted, Time: r.Clock.Now(), Job: j})
	}
	r.Inbox.Trigger()
	return nil
}

// SyncJob drives a job to what its Allocation says: an Admitted job runs with PickyMan's
// templates and its resume point; a Queued or Suspended job is suspended. A Preempting job
// is left to the handshake. A job is suspended only after the Allocation was read again from
// the API server, so that a stale cache never undoes an admission.
func (r *JobReconciler) SyncJob(ctx context.Context, job jobframework.GenericJob, a *v1alpha1.Allocation) error {
	switch a.Status.Phase {
	case v1alpha1.AllocationAdmitted:
		if !job.IsSuspended() {
			return nil
		}
		// Unsuspending is a change of its own, so the job is written whether or not the
		// templates needed one.
		jobframework.MutateTemplates(job, a.Name, r.socketDir(), jobframework.ResumePoint(a))
		if el, ok := job.(jobframework.Elastic); ok && a.Spec.Elastic != nil {
			// An elastic job runs at the size its Allocation was admitted at.
			for _, s := range a.Spec.PodSets {
				if s.Name == a.Spec.Elastic.PodSet {
					el.SetCount(s.Name, s.Count)
				}
			}
		}
		job.Suspend(false)
		if err := r.Client.Update(ctx, job.Object()); err != nil {
			return err
		}
		allocation.RecordEvent(r.Recorder, job.Object(), a, corev1.EventTypeNormal, "Started", "Admit", "admitted on %s from epoch %d", allocation.PlacementString(a.Status.Placement), a.Status.ResumeEpoch)
		return nil
	case v1alpha1.AllocationQueued, v1alpha1.AllocationSuspended:
		if job.IsSuspended() {
			return nil
		}
		fresh := &v1alpha1.Allocation{}
		if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(a), fresh); err != nil {
			return err
		}
		if fresh.Status.Phase != v1alpha1.AllocationQueued && fresh.Status.Phase != v1alpha1.AllocationSuspended {
			return nil
		}
		return suspendJob(ctx, r.Client, job)
	}
	return nil
}

func suspendJob(ctx context.Context, c client.Client, job jobframework.GenericJob) error {
	if job.IsSuspended() {
		return nil
	}
	job.Suspend(true)
	return c.Update(ctx, job.Object())
}

// notEnded counts the pods that have not ended (Succeeded or Failed); a pod being deleted
// counts until it is gone.
func notEnded(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}

// finish marks the Allocation Finished, frees its placement, and records the job's observed
// epochs (read from pods, the job's pods) in its model profile.
func (r *JobReconciler) finish(ctx context.Context, job jobframework.GenericJob, a *v1alpha1.Allocation, pods []*corev1.Pod, succeeded bool) error {
	now := now(r.Clock)
	prog := allocation.ReadProgress(pods)
	outcome := "Failed"
	if succeeded {
		outcome = "Succeeded"
	}
	if a.Status.Phase == v1alpha1.AllocationAdmitted && a.Status.LastAdmitted != nil {
		a.Status.AttainedGPUSeconds += int64(now.Sub(a.Status.LastAdmitted.Time).Seconds()) * int64(allocation.GPUs(a))
	}
	j := allocation.SchedJob(a, prog, now.Time)
	a.Status.Placement, a.Status.Reserved, a.Status.ReservedAt, a.Status.Checkpoint = nil, nil, nil, nil
	a.Status.Finished = &now
	a.Status.EpochsDone = max(a.Status.EpochsDone, prog.EpochsDone)
	allocation.SetPhase(a, v1alpha1.AllocationFinished, outcome, "the job ended", now)
	if err := r.Client.Status().Update(ctx, a); err != nil {
		return err
	}
	r.Metrics.Finished.WithLabelValues(a.Spec.Queue, outcome).Inc()
	allocation.RecordEvent(r.Recorder, job.Object(), a, corev1.EventTypeNormal, "Finished", "Finish", "%s after %d preemptions", outcome, a.Status.Preemptions)
	if j != nil {
		r.Inbox.Observe(sched.Event{Kind: sched.EventFinished, Time: now.Time, Job: j, Duration: now.Sub(a.CreationTimestamp.Time)})
	}
	r.scorePrediction(a)
	r.recordProfile(ctx, a, prog)
	r.Inbox.Trigger()
	return nil
}

func (r *JobReconciler) socketDir() string {
	if r.SocketDir != "" {
		return r.SocketDir
	}
	return agentv1alpha1.DefaultSocketDir
}

// queue returns the configured queue of that name.
func (r *JobReconciler) queue(name string) (configv1.Queue, bool) {
	for _, q := range r.Config.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return configv1.Queue{}, false
}

func now(c clock.PassiveClock) metav1.Time { return metav1.NewTime(c.Now()) }
