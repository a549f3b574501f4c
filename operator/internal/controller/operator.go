package controller

import (
	"context"
	"fmt"
	"sync"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/kinds"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/profile"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Operator holds what every controller of the operator shares.
type Operator struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Reader reads from the API server directly; used where a stale cache could make the
	// operator promise GPUs twice or free them early.
	Reader   client.Reader
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Clock    clock.WithTicker
	Config   *configv1.Configuration
	Metrics  *metrics.Metrics
	// Profiles is the model-profile database; nil disables profile updates.
	Profiles profile.Store
	// SocketDir is the host directory of the agent's socket (agentv1alpha1.DefaultSocketDir if
	// empty).
	SocketDir string
	// Observer, if set, is told what happens to jobs (a learning policy).
	Observer sched.Observer

	observeMu sync.Mutex
	// pending holds events observed by the controllers until the scheduler's next cycle
	// delivers them (see Scheduler.Cycle).
	pending []sched.Event
	trigger func()
}

// Trigger asks the scheduler for a cycle; cycles are coalesced.
func (o *Operator) Trigger() {
	if o.trigger != nil {
		o.trigger()
	}
}

// observe queues an event for the observer. The scheduler delivers the queue at the start of
// its next cycle, before it reads the snapshot: an event is queued only after the write it
// reports, so every delivered event is already in the snapshot the policy then decides on. A
// policy told of an event mid-cycle could spend it on a snapshot that predates it, and skip
// the next cycle as if nothing had changed.
func (o *Operator) observe(ev sched.Event) {
	if o.Observer == nil || ev.Job == nil {
		return
	}
	o.observeMu.Lock()
	defer o.observeMu.Unlock()
	o.pending = append(o.pending, ev)
}

// takeObserved returns the queued events and empties the queue.
func (o *Operator) takeObserved() []sched.Event {
	o.observeMu.Lock()
	defer o.observeMu.Unlock()
	evs := o.pending
	o.pending = nil
	return evs
}

func (o *Operator) socketDir() string {
	if o.SocketDir != "" {
		return o.SocketDir
	}
	return agentv1alpha1.DefaultSocketDir
}

func (o *Operator) now() metav1.Time { return metav1.NewTime(o.Clock.Now()) }

// queue returns the configured queue of that name.
func (o *Operator) queue(name string) (configv1.Queue, bool) {
	for _, q := range o.Config.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return configv1.Queue{}, false
}

// integrationFor returns the integration of an Allocation's job kind.
func integrationFor(ref v1alpha1.JobReference) (jobframework.Integration, bool) {
	for _, in := range kinds.Integrations() {
		if in.GVK.GroupVersion().String() == ref.APIVersion && in.GVK.Kind == ref.Kind {
			return in, true
		}
	}
	return jobframework.Integration{}, false
}

// jobOf reads the job an Allocation belongs to; nil if it is gone.
func (o *Operator) jobOf(ctx context.Context, a *v1alpha1.Allocation) (jobframework.GenericJob, error) {
	in, ok := integrationFor(a.Spec.Job)
	if !ok {
		return nil, fmt.Errorf("allocation %s: unknown job kind %s %s", JobID(a), a.Spec.Job.APIVersion, a.Spec.Job.Kind)
	}
	obj := in.NewObject()
	if err := o.Client.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Job.Name}, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if a.Spec.Job.UID != "" && string(obj.GetUID()) != a.Spec.Job.UID {
		return nil, nil
	}
	return in.Wrap(obj), nil
}

// podsOf lists the pods of an Allocation's job from the cache (live reports whether a pod
// can still answer a checkpoint request).
func (o *Operator) podsOf(ctx context.Context, r client.Reader, a *v1alpha1.Allocation) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(a.Namespace), client.MatchingLabels{v1alpha1.LabelAllocation: a.Name}); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// setCondition sets a condition of an Allocation and reports whether it changed.
func setCondition(a *v1alpha1.Allocation, typ string, status metav1.ConditionStatus, reason, msg string, now metav1.Time) bool {
	return apimeta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: now, ObservedGeneration: a.Generation,
	})
}

// setPhase sets the phase and keeps exactly the condition of the current phase true.
func setPhase(a *v1alpha1.Allocation, phase v1alpha1.AllocationPhase, reason, msg string, now metav1.Time) {
	a.Status.Phase = phase
	for _, c := range []string{v1alpha1.ConditionQueued, v1alpha1.ConditionAdmitted, v1alpha1.ConditionPreempting, v1alpha1.ConditionSuspended, v1alpha1.ConditionFinished} {
		if c == string(phase) {
			setCondition(a, c, metav1.ConditionTrue, reason, msg, now)
		} else if prev := apimeta.FindStatusCondition(a.Status.Conditions, c); prev != nil {
			// A phase left keeps the reason it was entered or left with (the handshake's
			// outcome stays readable on Suspended after the job is queued again).
			setCondition(a, c, metav1.ConditionFalse, prev.Reason, prev.Message, now)
		}
	}
}

// event records an event on the job of an Allocation (and on the Allocation as related).
func (o *Operator) event(job client.Object, a *v1alpha1.Allocation, typ, reason, action, msg string, args ...any) {
	if o.Recorder == nil || job == nil {
		return
	}
	var related runtime.Object
	if a != nil {
		related = a
	}
	o.Recorder.Eventf(job, related, typ, reason, action, msg, args...)
}
