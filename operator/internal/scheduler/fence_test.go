package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// TestFenceTwoSchedulers: two schedulers run at once (leader election off) on one 8-GPU node
// with four queued 4-GPU jobs. The second one's cycle runs in the worst place: after the
// first has taken its snapshot and decided to start two jobs, in the middle of its
// Allocation writes (the first landed, the second not yet), just after a high-priority job
// arrived. The second scheduler sees 4 GPUs free and starts the new job on them; the first
// one's second write touches another Allocation, so no resourceVersion stops it. Without the
// fence the node is promised 12 GPUs; with it never more than 8.
func TestFenceTwoSchedulers(t *testing.T) {
	for name, fenced := range map[string]bool{"fenced": true, "without the fence (the failure it prevents)": false} {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			objs := []client.Object{&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "n"},
				Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
			}}
			for i := range 4 {
				name := fmt.Sprintf("j%d", i)
				a := &v1alpha1.Allocation{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+i), 0))},
					Spec:       v1alpha1.AllocationSpec{Job: v1alpha1.JobReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: name}, Queue: "default", PodSets: []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 4}}},
				}
				a.Status.Phase = v1alpha1.AllocationQueued
				objs = append(objs, a)
			}
			var (
				second func()
				once   sync.Once
			)
			base := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
			// The first scheduler's client: after its first Allocation write lands, the
			// second scheduler runs a whole cycle.
			first := interceptor.NewClient(base, interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					err := c.SubResource(sub).Update(ctx, obj, opts...)
					if err == nil && second != nil {
						once.Do(second)
					}
					return err
				},
			})
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			newScheduler := func(c client.Client, id string) *Scheduler {
				cfg := &configv1.Configuration{}
				cfg.Default()
				cfg.WriteConcurrency = 1             // one write at a time: the second cycle runs between them
				pol, err := policies.ByName("kueue") // priority first: the second scheduler starts the new job at once
				if err != nil {
					t.Fatal(err)
				}
				sch := New(Scheduler{Client: c, Reader: c, Clock: clk, Config: cfg, Metrics: metrics.New(), Policy: pol})
				if fenced {
					sch.Fence = &Fence{Reader: c, Client: c, Clock: clk, Key: types.NamespacedName{Namespace: "pickyman-system", Name: FenceName}, Identity: id}
				}
				return sch
			}
			a, b := newScheduler(first, "a"), newScheduler(base, "b")
			ctx := context.Background()
			second = func() {
				h := &v1alpha1.Allocation{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "h", CreationTimestamp: metav1.NewTime(time.Unix(2000, 0))},
					Spec:       v1alpha1.AllocationSpec{Job: v1alpha1.JobReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "h"}, Queue: "default", Priority: 100, PodSets: []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 4}}},
				}
				h.Status.Phase = v1alpha1.AllocationQueued
				if err := base.Create(ctx, h); err != nil {
					t.Error(err)
				}
				if err := base.Status().Update(ctx, h); err != nil {
					t.Error(err)
				}
				if err := b.Cycle(ctx); err != nil {
					t.Errorf("second scheduler: %v", err)
				}
			}
			if err := a.Cycle(ctx); err != nil {
				t.Fatal(err)
			}
			// A few more cycles of both, as their loops would run.
			for range 3 {
				for _, sch := range []*Scheduler{a, b} {
					if err := sch.Cycle(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			var list v1alpha1.AllocationList
			if err := base.List(ctx, &list); err != nil {
				t.Fatal(err)
			}
			promised, admitted := int32(0), 0
			for i := range list.Items {
				if al := &list.Items[i]; allocation.HoldsGPUs(al) {
					promised += allocation.GPUsByNode(al.Status.Placement)["n"]
					admitted++
				}
			}
			if fenced {
				if promised != 8 || admitted != 2 {
					t.Fatalf("node n promised %d GPUs of 8 to %d jobs, want 8 to 2", promised, admitted)
				}
				return
			}
			if promised <= 8 {
				t.Fatalf("without the fence node n was promised %d GPUs: the interleaving did not happen, so the fenced case shows nothing", promised)
			}
		})
	}
}

// TestFencePromises: a scheduler counts another's promises that its snapshot does not show
// yet, not its own, and not once they are older than PromiseTTL.
func TestFencePromises(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	key := types.NamespacedName{Namespace: "ns", Name: FenceName}
	a := &Fence{Reader: c, Client: c, Clock: clk, Key: key, Identity: "a"}
	b := &Fence{Reader: c, Client: c, Clock: clk, Key: key, Identity: "b"}
	ctx := context.Background()
	sa, err := a.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps := []promise{{Job: "ns/j", Node: "n", GPUs: 8}}
	if err := a.commit(ctx, sa, ps, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.commit(ctx, sb, ps, nil); err == nil {
		t.Fatal("both schedulers swapped the fence they read at the same version")
	}
	if st, err := b.read(ctx); err != nil || len(st.others) != 1 {
		t.Fatalf("b reads %+v (%v), want a's promise", st, err)
	}
	if st, err := a.read(ctx); err != nil || len(st.others) != 0 {
		t.Fatalf("a reads %+v (%v), want none of its own", st, err)
	}
	// b swaps in a promise of its own 10 s later and keeps a's, which stays a's, with a's
	// time.
	clk.Step(10 * time.Second)
	sb, err = b.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.commit(ctx, sb, []promise{{Job: "ns/k", Node: "m", GPUs: 4}}, sb.others); err != nil {
		t.Fatal(err)
	}
	if st, err := a.read(ctx); err != nil || len(st.others) != 1 || st.others[0].Job != "ns/k" || st.others[0].Holder != "b" {
		t.Fatalf("a reads %+v (%v), want b's promise only", st, err)
	}
	if st, err := b.read(ctx); err != nil || len(st.others) != 1 || st.others[0].Job != "ns/j" || st.others[0].Holder != "a" {
		t.Fatalf("b reads %+v (%v), want a's promise, kept", st, err)
	}
	clk.Step(PromiseTTL - 5*time.Second) // past a's promise's TTL, within b's
	if st, err := b.read(ctx); err != nil || len(st.others) != 0 {
		t.Fatalf("b reads %+v (%v) past the TTL of a's promise, want none", st, err)
	}
	if st, err := a.read(ctx); err != nil || len(st.others) != 1 {
		t.Fatalf("a reads %+v (%v), want b's promise, within its TTL", st, err)
	}
}

// TestFenceReadManySwapsAgo: a scheduler's informer cache may lag behind its own swaps by
// many of them when the API server is saturated (a cycle a second or more behind, at several
// swaps a second). A swap against a fence read that long ago still goes through when every
// change since was this scheduler's own; once another scheduler swapped in between, it
// fails.
func TestFenceReadManySwapsAgo(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	key := types.NamespacedName{Namespace: "ns", Name: FenceName}
	a := &Fence{Reader: c, Client: c, Clock: clk, Key: key, Identity: "a"}
	b := &Fence{Reader: c, Client: c, Clock: clk, Key: key, Identity: "b"}
	ctx := context.Background()
	stale, err := a.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := a.commit(ctx, stale, []promise{{Job: fmt.Sprintf("ns/j%d", i), Node: "n", GPUs: 1}}, nil); err != nil {
			t.Fatalf("swap %d against the fence read %d swaps before: %v", i, i, err)
		}
	}
	// b swaps once; a's swaps against any fence it read before fail from then on.
	sb, err := b.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.commit(ctx, sb, []promise{{Job: "ns/k", Node: "m", GPUs: 4}}, sb.others); err != nil {
		t.Fatal(err)
	}
	if err := a.commit(ctx, stale, []promise{{Job: "ns/x", Node: "n", GPUs: 1}}, nil); !apierrors.IsConflict(err) {
		t.Errorf("a swapped against a fence read before b's swap: %v, want a conflict", err)
	}
	fresh, err := a.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh.others) != 1 || fresh.others[0].Job != "ns/k" {
		t.Fatalf("a reads %+v, want b's promise", fresh.others)
	}
	if err := a.commit(ctx, fresh, []promise{{Job: "ns/x", Node: "n", GPUs: 1}}, fresh.others); err != nil {
		t.Fatalf("a's swap against the fence read after b's: %v", err)
	}
	if err := a.commit(ctx, stale, []promise{{Job: "ns/y", Node: "n", GPUs: 1}}, nil); !apierrors.IsConflict(err) {
		t.Errorf("a swapped against a fence read before b's swap, after a swap of its own on top of b's: %v, want a conflict", err)
	}
}

// TestCountPromises: another scheduler's promise counts while its Allocation is still at the
// version the promise was decided on (the write may yet land), beyond what it already holds
// there; not once the Allocation changed (the listing shows the outcome).
func TestCountPromises(t *testing.T) {
	alloc := func(rv string, phase v1alpha1.AllocationPhase, gpus int32) *v1alpha1.Allocation {
		a := &v1alpha1.Allocation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", ResourceVersion: rv}}
		a.Status.Phase = phase
		if gpus > 0 {
			a.Status.Placement = []v1alpha1.NodeAssignment{{PodSet: "Master", Node: "n", Pods: 1, GPUs: gpus}}
		}
		return a
	}
	p := promise{Job: "ns/j", ResourceVersion: "5", Node: "n", GPUs: 8}
	for name, tc := range map[string]struct {
		alloc *v1alpha1.Allocation
		want  int32
		// kept: whether a swap keeps the promise in the fence.
		kept bool
	}{
		"start not landed":                {alloc: alloc("5", v1alpha1.AllocationQueued, 0), want: 8, kept: true},
		"start landed":                    {alloc: alloc("6", v1alpha1.AllocationAdmitted, 8), want: 0},
		"admitted, then suspended":        {alloc: alloc("9", v1alpha1.AllocationQueued, 0), want: 0},
		"grow not landed: the added GPUs": {alloc: alloc("5", v1alpha1.AllocationAdmitted, 4), want: 4, kept: true},
		"deleted, or not cached yet":      {want: 0, kept: true},
	} {
		t.Run(name, func(t *testing.T) {
			snap := &sched.Snapshot{Nodes: []sched.Node{{Name: "n", GPUs: 8}}}
			allocs := map[string]*v1alpha1.Allocation{}
			if tc.alloc != nil {
				allocs["ns/j"] = tc.alloc
			}
			kept := countPromises(snap, allocs, []promise{p})
			if got := snap.Nodes[0].Used; got != tc.want {
				t.Errorf("used %d, want %d", got, tc.want)
			}
			if (len(kept) == 1) != tc.kept {
				t.Errorf("kept %v, want kept: %v", kept, tc.kept)
			}
		})
	}
}

// TestFenceBoundsCycle: 3,000 queued one-GPU jobs and room for all of them. One cycle's
// promises go into one annotation of the fence, which the API server refuses over 256 KiB
// (about 2,300 promises): the cycle carries out at most MaxPromises starts, the fence
// stays within the limit, and the next cycles admit the rest.
func TestFenceBoundsCycle(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	const jobs = 3000
	var objs []client.Object
	for i := range jobs / 8 {
		objs = append(objs, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i)},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
		})
	}
	for i := range jobs {
		name := fmt.Sprintf("job-with-a-long-name-%05d", i)
		a := &v1alpha1.Allocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-namespace", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+i), 0))},
			Spec:       v1alpha1.AllocationSpec{Job: v1alpha1.JobReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: name}, Queue: "default", PodSets: []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 1}}},
		}
		a.Status.Phase = v1alpha1.AllocationQueued
		objs = append(objs, a)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
	conf := &configv1.Configuration{}
	conf.Default()
	pol, err := policies.ByName("fifo")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(100000, 0))
	key := types.NamespacedName{Namespace: "pickyman-system", Name: FenceName}
	// An identity as long as the operator's (its pod's name and a UUID).
	sc := New(Scheduler{Client: c, Reader: c, Clock: clk, Config: conf, Metrics: metrics.New(), Policy: pol,
		Fence: &Fence{Reader: c, Client: c, Clock: clk, Key: key, Identity: "pickyman-operator-5d8c7b9f6d-x2k4q_6f1c2a3e-8b9d-4e5f-a1b2-c3d4e5f6a7b8"}})
	ctx := context.Background()
	admitted := func() int {
		var list v1alpha1.AllocationList
		if err := c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range list.Items {
			if list.Items[i].Status.Phase == v1alpha1.AllocationAdmitted {
				n++
			}
		}
		return n
	}
	for cycle := 1; admitted() < jobs; cycle++ {
		if cycle > 10 {
			t.Fatalf("%d of %d jobs admitted after 10 cycles", admitted(), jobs)
		}
		if err := sc.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		if n := admitted(); n > cycle*MaxPromises {
			t.Errorf("%d jobs admitted after %d cycles, want at most %d a cycle", n, cycle, MaxPromises)
		}
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, key, l); err != nil {
			t.Fatal(err)
		}
		if size := len(l.Annotations[annotationPromises]); size > 256<<10 {
			t.Fatalf("cycle %d wrote %d bytes of promises into the fence; the API server refuses over 262144", cycle, size)
		}
	}
}
