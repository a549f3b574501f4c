//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	allocutil "github.com/pickyman/pickyman/operator/internal/allocation"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// An admitted job's pods are bound exactly to the nodes of its placement, one 8-GPU pod per
// node, and a second job that does not fit stays suspended with its pods unbound.
func TestAdmissionPinsPodsToPlacement(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "adm-a", "adm-b", "adm-c")
	fakeTrainingOperator(t, ns)
	op := startOperator(t, testConfig("fifo"))
	ctx := context.Background()

	job := utiltesting.MakePyTorchJob("big", ns).Master(8).Workers(2, 8).Obj()
	if err := k8s.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	a := waitPhase(t, ns, "big", v1alpha1.AllocationAdmitted, 20*time.Second)
	if got := len(allocutil.GPUsByNode(a.Status.Placement)); got != 3 {
		t.Fatalf("placement %v spans %d nodes, want 3", a.Status.Placement, got)
	}
	eventually(t, 20*time.Second, func() error {
		pods, err := jobPods(ns, "big")
		if err != nil {
			return err
		}
		if len(pods) != 3 {
			return fmt.Errorf("%d pods, want 3", len(pods))
		}
		seen := map[string]bool{}
		for _, p := range pods {
			set := map[string]string{"master": "Master", "worker": "Worker"}[p.Labels[kftraining.ReplicaTypeLabel]]
			var idx int32
			if _, err := fmt.Sscan(p.Labels[kftraining.ReplicaIndexLabel], &idx); err != nil {
				return fmt.Errorf("pod %s: replica index %q: %w", p.Name, p.Labels[kftraining.ReplicaIndexLabel], err)
			}
			want, _ := allocutil.NodeFor(a.Status.Placement, set, idx)
			if p.Spec.NodeName != want {
				return fmt.Errorf("pod %s on %q, want %q", p.Name, p.Spec.NodeName, want)
			}
			if seen[p.Spec.NodeName] {
				return fmt.Errorf("two pods on %s", p.Spec.NodeName)
			}
			seen[p.Spec.NodeName] = true
			if p.Spec.SchedulerName != v1alpha1.SchedulerName {
				return fmt.Errorf("pod %s has scheduler %q", p.Name, p.Spec.SchedulerName)
			}
			if !hasEnv(&p, agentv1alpha1.EnvSocket) {
				return fmt.Errorf("pod %s lacks %s", p.Name, agentv1alpha1.EnvSocket)
			}
		}
		return nil
	})
	cachedWithoutManagedFields(t, op, ns, "big")

	// A job that does not fit in the free GPUs waits, suspended, pods neither created nor bound.
	wait := utiltesting.MakePyTorchJob("wait", ns).Master(8).Obj()
	if err := k8s.Create(ctx, wait); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "wait", v1alpha1.AllocationQueued, 10*time.Second)
	time.Sleep(2 * time.Second) // two scheduling cycles
	if a, _ := allocation(ns, "wait"); a.Status.Phase != v1alpha1.AllocationQueued {
		t.Fatalf("job that does not fit is %s", a.Status.Phase)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(wait), wait); err != nil || !*wait.Spec.RunPolicy.Suspend {
		t.Fatalf("queued job is not suspended (err %v)", err)
	}

	// When the first job finishes, the waiting one starts and the GPUs are freed.
	finishJob(t, ns, "big")
	waitPhase(t, ns, "big", v1alpha1.AllocationFinished, 10*time.Second)
	waitPhase(t, ns, "wait", v1alpha1.AllocationAdmitted, 10*time.Second)
}

func hasEnv(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name {
				return true
			}
		}
	}
	return false
}

// cachedWithoutManagedFields checks that the operator's cache holds the job, its Allocation
// and its pods without managedFields, which the API server's copies have: the cache strips
// them (setup.New), as no component reads them.
func cachedWithoutManagedFields(t *testing.T, op *operator, ns, name string) {
	t.Helper()
	ctx := context.Background()
	cached := op.mgr.GetClient()
	keys := map[client.Object]client.ObjectKey{
		&kftraining.PyTorchJob{}: {Namespace: ns, Name: name},
		&v1alpha1.Allocation{}:   {Namespace: ns, Name: jobframework.AllocationName(kftraining.PyTorchJobKind, name)},
	}
	for o, key := range keys {
		if err := k8s.Get(ctx, key, o); err != nil {
			t.Fatal(err)
		}
		if len(o.GetManagedFields()) == 0 {
			t.Fatalf("%T %s: the API server's copy has no managedFields to strip", o, key)
		}
		if err := cached.Get(ctx, key, o); err != nil {
			t.Fatal(err)
		}
		if n := len(o.GetManagedFields()); n != 0 {
			t.Errorf("%T %s: the operator's cache holds %d managedFields entries, want none", o, key, n)
		}
	}
	var pods corev1.PodList
	if err := cached.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatal("the operator's cache holds no pod of the job")
	}
	for _, p := range pods.Items {
		if n := len(p.ManagedFields); n != 0 {
			t.Errorf("pod %s: the operator's cache holds %d managedFields entries, want none", p.Name, n)
		}
	}
}
