package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// Binder binds the pods of admitted jobs to their nodes. A pod with schedulerName pickyman
// and no node goes to the node that its Allocation's placement gives its pod set and index
// (see NodeFor); pods of jobs that are not Admitted stay pending.
type Binder struct {
	*Operator
}

// SetupWithManager watches unbound PickyMan pods, and Allocations (an admission binds the
// pods that were waiting for it).
func (b *Binder) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("binder").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(unbound))).
		Watches(&v1alpha1.Allocation{}, handler.EnqueueRequestsFromMapFunc(b.podsOfAllocation)).
		Complete(b)
}

func unbound(obj client.Object) bool {
	p, ok := obj.(*corev1.Pod)
	return ok && p.Spec.SchedulerName == v1alpha1.SchedulerName && p.Spec.NodeName == "" && p.DeletionTimestamp == nil
}

func (b *Binder) podsOfAllocation(ctx context.Context, obj client.Object) []reconcile.Request {
	a := obj.(*v1alpha1.Allocation)
	if a.Status.Phase != v1alpha1.AllocationAdmitted {
		return nil
	}
	pods, err := b.podsOf(ctx, b.Client, a)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range pods {
		if unbound(p) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		}
	}
	return out
}

// Reconcile implements reconcile.Reconciler.
func (b *Binder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := b.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !unbound(pod) {
		return ctrl.Result{}, nil
	}
	name, ok := pod.Labels[v1alpha1.LabelAllocation]
	if !ok {
		return ctrl.Result{}, nil
	}
	a := &v1alpha1.Allocation{}
	if err := b.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, a); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if a.Status.Phase != v1alpha1.AllocationAdmitted {
		return ctrl.Result{}, nil
	}
	job, err := b.jobOf(ctx, a)
	if err != nil || job == nil {
		return ctrl.Result{}, err
	}
	set, idx, ok := job.PodSetOf(pod)
	if !ok {
		return ctrl.Result{}, nil
	}
	node, ok := NodeFor(a.Status.Placement, set, idx)
	if !ok {
		b.event(pod, a, corev1.EventTypeWarning, "FailedScheduling", "Bind", "placement of %s has no node for %s %d", JobID(a), set, idx)
		return ctrl.Result{}, nil
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := b.Client.SubResource("binding").Create(ctx, pod, binding); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).V(1).Info("bound", "pod", req.NamespacedName, "node", node)
	b.event(pod, a, corev1.EventTypeNormal, "Scheduled", "Bind", "bound to %s (%s %d of %s)", node, set, idx, JobID(a))
	return ctrl.Result{}, nil
}
