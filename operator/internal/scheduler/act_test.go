package scheduler

import (
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clocktesting "k8s.io/utils/clock/testing"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// TestActReservesBeforePreempting: the waiting job's reservation is written before any victim
// is asked to checkpoint, so an operator that dies between the writes never leaves victims
// freeing GPUs that nobody holds for the job they were freed for (another job could take
// them, and the policy would preempt again for the same job).
func TestActReservesBeforePreempting(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	alloc := func(name string, phase v1alpha1.AllocationPhase, node string) *v1alpha1.Allocation {
		a := &v1alpha1.Allocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:       v1alpha1.AllocationSpec{Job: v1alpha1.JobReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: name}, Queue: "default", PodSets: []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 4}}},
		}
		a.Status.Phase = phase
		if node != "" {
			a.Status.Placement = []v1alpha1.NodeAssignment{{PodSet: "Master", Node: node, Pods: 1, GPUs: 4}}
		}
		return a
	}
	objs := []client.Object{alloc("v1", v1alpha1.AllocationAdmitted, "n"), alloc("v2", v1alpha1.AllocationAdmitted, "n"), alloc("q", v1alpha1.AllocationQueued, "")}
	var (
		mu     sync.Mutex
		writes []string
	)
	base := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
	// The scheduler writes Allocations only: the job and handshake controllers carry them
	// into jobs and pods.
	notAllocation := func(verb string, obj client.Object) {
		if _, ok := obj.(*v1alpha1.Allocation); !ok {
			t.Errorf("the scheduler %s a %T", verb, obj)
		}
	}
	c := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			notAllocation("updated", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			notAllocation("patched", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			a := obj.(*v1alpha1.Allocation)
			what := string(a.Status.Phase)
			if len(a.Status.Reserved) > 0 {
				what += "+reserved"
			}
			mu.Lock()
			writes = append(writes, a.Name+":"+what)
			mu.Unlock()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	conf := &configv1.Configuration{}
	conf.Default()
	sc := New(Scheduler{Client: c, Reader: c, Clock: clocktesting.NewFakeClock(utiltesting.Epoch), Config: conf, Metrics: metrics.New()})
	allocs := map[string]*v1alpha1.Allocation{}
	for _, o := range objs {
		a := &v1alpha1.Allocation{}
		if err := base.Get(context.Background(), client.ObjectKeyFromObject(o), a); err != nil {
			t.Fatal(err)
		}
		allocs[allocation.JobID(a)] = a
	}
	d := sched.Decisions{
		Preemptions:  []sched.Preemption{{JobID: "ns/v1", Mode: sched.SuspendBoundary, For: "ns/q"}, {JobID: "ns/v2", Mode: sched.SuspendBoundary, For: "ns/q"}},
		Reservations: []sched.Reservation{{JobID: "ns/q", Placement: []sched.Slot{{Node: "n", Workers: 1, GPUs: 8}}}},
	}
	if err := sc.act(context.Background(), &sched.Snapshot{Now: utiltesting.Epoch}, allocs, d); err != nil {
		t.Fatal(err)
	}
	// The preemptions go out concurrently, after the reservation.
	if len(writes) > 1 {
		sort.Strings(writes[1:])
	}
	want := []string{"q:Queued+reserved", "v1:Preempting", "v2:Preempting"}
	if diff := cmp.Diff(want, writes); diff != "" {
		t.Errorf("Allocation writes (-want +got):\n%s", diff)
	}
}
