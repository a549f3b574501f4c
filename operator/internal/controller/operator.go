package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/protocol"
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
	// SocketDir is the host directory of the agent's socket (protocol.DefaultSocketDir if
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
	return protocol.DefaultSocketDir
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
	for _, in := range jobframework.Integrations() {
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

// resumePoint is the value of the resume-from annotation for an Allocation.
func resumePoint(a *v1alpha1.Allocation) string {
	rp := protocol.ResumePoint{Epoch: a.Status.ResumeEpoch, Path: a.Status.ResumePath}
	if _, hi, ok := elasticBounds(a); ok {
		// An elastic job learns its size and the size its epoch time and schedule refer to
		// (its reference count, by default its maximum).
		rp.WorldSize, rp.ReferenceWorldSize = podCount(a.Spec.PodSets), hi
		if e := a.Spec.Elastic; e.ReferenceCount > 0 {
			rp.ReferenceWorldSize = hi - e.MaxCount + e.ReferenceCount
		}
	}
	b, _ := json.Marshal(rp)
	return string(b)
}

// MutateTemplates makes a job's pod templates PickyMan's: schedulerName pickyman (the binder
// places the pods), the Allocation label (the operator finds the pods by it), the agent's
// socket (volume, mount and environment), and, when resume is set, the resume-from
// annotation. It reports whether anything changed.
func MutateTemplates(job jobframework.GenericJob, allocName, socketDir string, resume string) bool {
	changed := false
	for _, t := range job.PodTemplates() {
		if t.Spec.SchedulerName != v1alpha1.SchedulerName {
			t.Spec.SchedulerName = v1alpha1.SchedulerName
			changed = true
		}
		if t.Labels[v1alpha1.LabelAllocation] != allocName {
			if t.Labels == nil {
				t.Labels = map[string]string{}
			}
			t.Labels[v1alpha1.LabelAllocation] = allocName
			changed = true
		}
		if resume != "" && t.Annotations[protocol.AnnotationResumeFrom] != resume {
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			t.Annotations[protocol.AnnotationResumeFrom] = resume
			changed = true
		}
		if addAgentSocket(&t.Spec, socketDir) {
			changed = true
		}
	}
	return changed
}

const agentVolume = "pickyman-agent"

func addAgentSocket(spec *corev1.PodSpec, dir string) bool {
	changed := false
	found := false
	for _, v := range spec.Volumes {
		found = found || v.Name == agentVolume
	}
	if !found {
		hp := corev1.HostPathDirectoryOrCreate
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: agentVolume, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hp}}})
		changed = true
	}
	sock := dir + "/" + protocol.SocketName
	for i := range spec.Containers {
		c := &spec.Containers[i]
		has := false
		for _, m := range c.VolumeMounts {
			has = has || m.Name == agentVolume
		}
		if !has {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: agentVolume, MountPath: dir})
			changed = true
		}
		hasEnv := false
		for _, e := range c.Env {
			hasEnv = hasEnv || e.Name == protocol.EnvSocket
		}
		if !hasEnv {
			c.Env = append(c.Env, corev1.EnvVar{Name: protocol.EnvSocket, Value: sock})
			changed = true
		}
	}
	return changed
}
