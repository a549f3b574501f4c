//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
)

// GPUs held by a pod PickyMan did not place (another workload's, bound to the node by
// another scheduler) are not promised to a PickyMan job: the job waits until the pod is gone.
func TestOtherWorkloadsGPUsCounted(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "acct-a")
	fakeTrainingOperator(t, ns)
	ctx := context.Background()
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inference"},
		Spec: corev1.PodSpec{NodeName: "acct-a", Containers: []corev1.Container{{Name: "serve", Image: "serve",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("6")}}}}},
	}
	if err := k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	startOperator(t, testConfig("fifo"))

	small := utiltesting.MakePyTorchJob("small", ns).Master(2).Obj()
	if err := k8s.Create(ctx, small); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "small", v1alpha1.AllocationAdmitted, 20*time.Second)
	big := utiltesting.MakePyTorchJob("big", ns).Master(4).Obj()
	if err := k8s.Create(ctx, big); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "big", v1alpha1.AllocationQueued, 10*time.Second)
	time.Sleep(3 * time.Second) // three scheduling cycles
	if a, _ := allocation(ns, "big"); a.Status.Phase != v1alpha1.AllocationQueued {
		t.Fatalf("a 4-GPU job beside 6 GPUs of another workload and 2 of PickyMan's on an 8-GPU node is %s, want Queued", a.Status.Phase)
	}
	if err := k8s.Delete(ctx, other, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "big", v1alpha1.AllocationAdmitted, 20*time.Second)
}
