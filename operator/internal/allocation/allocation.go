package allocation

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/kinds"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// JobID is the scheduling-core ID of an Allocation: namespace/name.
func JobID(a *v1alpha1.Allocation) string { return a.Namespace + "/" + a.Name }

// HoldsGPUs reports whether an Allocation's placement counts against its nodes: while it is
// Admitted, Preempting or Suspended (the Allocation keeps its placement until the job's pods
// are gone; only then does it go back to Queued).
func HoldsGPUs(a *v1alpha1.Allocation) bool {
	switch a.Status.Phase {
	case v1alpha1.AllocationAdmitted, v1alpha1.AllocationPreempting, v1alpha1.AllocationSuspended:
		return true
	}
	return false
}

// GPUs is the number of GPUs an Allocation's gang asks for.
func GPUs(a *v1alpha1.Allocation) int32 {
	var n int32
	for _, s := range a.Spec.PodSets {
		n += s.Count * s.GPUsPerPod
	}
	return n
}

// PlacementString is a placement for logs and events: node:podset xN, comma-separated.
func PlacementString(p []v1alpha1.NodeAssignment) string {
	s := ""
	for i, a := range p {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%s:%s x%d", a.Node, a.PodSet, a.Pods)
	}
	return s
}

// Live reports whether a pod can still answer a checkpoint request: not being deleted and
// not ended.
func Live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Started reports whether a pod's containers have run: bound to a node and past Pending. A
// pod that has not started has trained nothing since its job's last start, so it has no
// checkpoint to take, and neither has its gang, which trains only once every pod runs.
func Started(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != "" && p.Status.Phase != corev1.PodPending
}

// IntegrationFor returns the integration of an Allocation's job kind.
func IntegrationFor(ref v1alpha1.JobReference) (jobframework.Integration, bool) {
	for _, in := range kinds.Integrations() {
		if in.GVK.GroupVersion().String() == ref.APIVersion && in.GVK.Kind == ref.Kind {
			return in, true
		}
	}
	return jobframework.Integration{}, false
}

// JobOf reads the job an Allocation belongs to; nil if it is gone (or a later job of the
// same name replaced it).
func JobOf(ctx context.Context, r client.Reader, a *v1alpha1.Allocation) (jobframework.GenericJob, error) {
	in, ok := IntegrationFor(a.Spec.Job)
	if !ok {
		return nil, fmt.Errorf("allocation %s: unknown job kind %s %s", JobID(a), a.Spec.Job.APIVersion, a.Spec.Job.Kind)
	}
	obj := in.NewObject()
	if err := r.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Job.Name}, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if a.Spec.Job.UID != "" && string(obj.GetUID()) != a.Spec.Job.UID {
		return nil, nil
	}
	return in.Wrap(obj), nil
}

// PodsOf lists the pods of an Allocation's job (they carry its label) through r.
func PodsOf(ctx context.Context, r client.Reader, a *v1alpha1.Allocation) ([]*corev1.Pod, error) {
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

// SetCondition sets a condition of an Allocation and reports whether it changed.
func SetCondition(a *v1alpha1.Allocation, typ string, status metav1.ConditionStatus, reason, msg string, now metav1.Time) bool {
	return apimeta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: now, ObservedGeneration: a.Generation,
	})
}

// SetPhase sets the phase and keeps exactly the condition of the current phase true.
func SetPhase(a *v1alpha1.Allocation, phase v1alpha1.AllocationPhase, reason, msg string, now metav1.Time) {
	a.Status.Phase = phase
	for _, c := range []string{v1alpha1.ConditionQueued, v1alpha1.ConditionAdmitted, v1alpha1.ConditionPreempting, v1alpha1.ConditionSuspended, v1alpha1.ConditionFinished} {
		if c == string(phase) {
			SetCondition(a, c, metav1.ConditionTrue, reason, msg, now)
		} else if prev := apimeta.FindStatusCondition(a.Status.Conditions, c); prev != nil {
			// A phase left keeps the reason it was entered or left with (the handshake's
			// outcome stays readable on Suspended after the job is queued again).
			SetCondition(a, c, metav1.ConditionFalse, prev.Reason, prev.Message, now)
		}
	}
}

// RecordEvent records an event on the job of an Allocation (and on the Allocation as
// related); a nil recorder or job records nothing.
func RecordEvent(rec events.EventRecorder, job client.Object, a *v1alpha1.Allocation, typ, reason, action, msg string, args ...any) {
	if rec == nil || job == nil {
		return
	}
	var related runtime.Object
	if a != nil {
		related = a
	}
	rec.Eventf(job, related, typ, reason, action, msg, args...)
}

// SlotWorkers is the number of workers of a placement.
func SlotWorkers(slots []sched.Slot) int32 {
	var n int32
	for _, s := range slots {
		n += s.Workers
	}
	return n
}

// ResizedSets returns the Allocation's pod sets at a gang of workers pods: the elastic pod
// set takes what the fixed ones leave. It returns the pod sets unchanged for a rigid job.
func ResizedSets(a *v1alpha1.Allocation, workers int32) []v1alpha1.PodSet {
	out := slices.Clone(a.Spec.PodSets)
	if a.Spec.Elastic == nil {
		return out
	}
	fixed := jobframework.PodCount(out)
	i := slices.IndexFunc(out, func(s v1alpha1.PodSet) bool { return s.Name == a.Spec.Elastic.PodSet })
	if i < 0 {
		return out
	}
	fixed -= out[i].Count
	out[i].Count = max(0, workers-fixed)
	return out
}
