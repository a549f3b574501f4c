package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// Binder binds the pods of admitted jobs to their nodes. A pod with schedulerName pickyman
// and no node goes to the node that its Allocation's placement gives its pod set and index
// (see NodeFor); pods of jobs that are not Admitted stay pending.
type Binder struct {
	// Client reads from the manager's cache and binds pods.
	Client   client.Client
	Recorder events.EventRecorder

	// recent remembers the pods this binder bound, for the kinds whose pods carry no index
	// (jobframework.AnyIndex): the cache may not show a binding yet when the next pod of the
	// same pod set asks for a slot.
	mu     sync.Mutex
	recent map[types.UID]binding
}

// binding is a pod bound by the binder: its node and when.
type binding struct {
	node string
	at   time.Time
}

// recentTTL bounds how long the binder remembers a binding; the cache shows it long before.
const recentTTL = 2 * time.Minute

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
	pods, err := allocation.PodsOf(ctx, b.Client, a)
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
	job, err := allocation.JobOf(ctx, b.Client, a)
	if err != nil || job == nil {
		return ctrl.Result{}, err
	}
	set, idx, ok := job.PodSetOf(pod)
	if !ok {
		return ctrl.Result{}, nil
	}
	var node string
	if idx == jobframework.AnyIndex {
		var err error
		if node, idx, err = b.freeSlot(ctx, a, job, set, pod); err != nil {
			return ctrl.Result{}, err
		}
		if node == "" {
			// Every slot is taken by a pod of the job that is still leaving: try again.
			log.FromContext(ctx).V(1).Info("no free slot yet", "pod", req.NamespacedName, "podSet", set)
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	} else if node, ok = allocation.NodeFor(a.Status.Placement, set, idx); !ok {
		allocation.RecordEvent(b.Recorder, pod, a, corev1.EventTypeWarning, "FailedScheduling", "Bind", "placement of %s has no node for %s %d", allocation.JobID(a), set, idx)
		return ctrl.Result{}, nil
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := b.Client.SubResource("binding").Create(ctx, pod, binding); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	b.remember(pod.UID, node)
	log.FromContext(ctx).V(1).Info("bound", "pod", req.NamespacedName, "node", node)
	allocation.RecordEvent(b.Recorder, pod, a, corev1.EventTypeNormal, "Scheduled", "Bind", "bound to %s (%s %d of %s)", node, set, idx, allocation.JobID(a))
	return ctrl.Result{}, nil
}

// freeSlot returns a node of the pod set's placement with room for one more of its pods, and
// the slot's index in the pod set: the placement's pods per node minus the job's pods of the
// pod set already bound there (by the cache, or by this binder where the cache lags). Pods
// that have ended hold no slot; pods being deleted still do. "" when every slot is taken.
func (b *Binder) freeSlot(ctx context.Context, a *v1alpha1.Allocation, job jobframework.GenericJob, set string, pod *corev1.Pod) (string, int32, error) {
	pods, err := allocation.PodsOf(ctx, b.Client, a)
	if err != nil {
		return "", 0, err
	}
	used := map[string]int32{}
	for _, p := range pods {
		if p.UID == pod.UID || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if s, _, ok := job.PodSetOf(p); !ok || s != set {
			continue
		}
		node := p.Spec.NodeName
		if node == "" {
			node = b.boundTo(p.UID)
		}
		if node != "" {
			used[node]++
		}
	}
	idx := int32(0)
	for _, as := range a.Status.Placement {
		if as.PodSet != set {
			continue
		}
		take := min(as.Pods, used[as.Node])
		used[as.Node] -= take
		if take < as.Pods {
			return as.Node, idx + take, nil
		}
		idx += as.Pods
	}
	return "", 0, nil
}

// remember records a binding and forgets those older than recentTTL.
func (b *Binder) remember(uid types.UID, node string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.recent == nil {
		b.recent = map[types.UID]binding{}
	}
	for k, v := range b.recent {
		if now.Sub(v.at) > recentTTL {
			delete(b.recent, k)
		}
	}
	b.recent[uid] = binding{node: node, at: now}
}

// boundTo returns the node this binder bound a pod to, "" if none it remembers.
func (b *Binder) boundTo(uid types.UID) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recent[uid].node
}
