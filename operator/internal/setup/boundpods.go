package setup

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// boundPodsCache holds the pods bound to a node and not finished, of every workload, for the
// GPUs they hold there (the scheduler counts them; see scheduler.BuildSnapshot). Each pod is
// kept only as far as that needs: name, namespace, the Allocation label, node, phase and the
// GPU counts of its containers, so that a cluster's pods cost little memory. It runs on
// every replica, not only the leader, so that a new leader schedules at once.
type boundPodsCache struct{ cache.Cache }

// NeedLeaderElection reports that the cache runs on every replica.
func (boundPodsCache) NeedLeaderElection() bool { return false }

func newBoundPodsCache(mgr ctrl.Manager, gpu corev1.ResourceName) (boundPodsCache, error) {
	sel := fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	)
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: sel, Transform: GPUPodTransform(gpu)},
		},
	})
	if err != nil {
		return boundPodsCache{}, fmt.Errorf("bound pods cache: %w", err)
	}
	return boundPodsCache{c}, nil
}

// GPUPodTransform strips a pod to what its GPU count on its node needs (see
// jobframework.GPULimit) and what identifies it.
func GPUPodTransform(gpu corev1.ResourceName) toolscache.TransformFunc {
	keep := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i := range cs {
			out[i].Name = cs[i].Name
			out[i].RestartPolicy = cs[i].RestartPolicy
			if q, ok := cs[i].Resources.Limits[gpu]; ok {
				out[i].Resources.Limits = corev1.ResourceList{gpu: q}
			}
			if q, ok := cs[i].Resources.Requests[gpu]; ok {
				out[i].Resources.Requests = corev1.ResourceList{gpu: q}
			}
		}
		return out
	}
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		out := &corev1.Pod{
			TypeMeta: p.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name: p.Name, Namespace: p.Namespace, UID: p.UID,
				ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp,
			},
			Spec: corev1.PodSpec{
				NodeName:       p.Spec.NodeName,
				Containers:     keep(p.Spec.Containers),
				InitContainers: keep(p.Spec.InitContainers),
			},
			Status: corev1.PodStatus{Phase: p.Status.Phase},
		}
		if v, ok := p.Labels[v1alpha1.LabelAllocation]; ok {
			out.Labels = map[string]string{v1alpha1.LabelAllocation: v}
		}
		if q, ok := p.Spec.Overhead[gpu]; ok {
			out.Spec.Overhead = corev1.ResourceList{gpu: q}
		}
		return out, nil
	}
}
