package scheduler

import (
	"context"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies"
)

// laggingCluster is an API server (server) and an informer cache that shows its objects only
// when synced, as a cache lags behind the writes.
type laggingCluster struct {
	t      *testing.T
	server client.WithWatch
	cache  client.WithWatch
	client client.Client
}

func newLaggingCluster(t *testing.T, objs ...client.Object) *laggingCluster {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	build := func() client.WithWatch {
		return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
	}
	lc := &laggingCluster{t: t, server: build(), cache: build()}
	for _, o := range objs {
		if err := lc.server.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	lc.sync()
	// Reads come from the cache, writes go to the server.
	lc.client = interceptor.NewClient(lc.server, interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return lc.cache.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return lc.cache.List(ctx, list, opts...)
		},
	})
	return lc
}

// sync makes the cache show exactly what the server holds, resourceVersions included.
func (lc *laggingCluster) sync() {
	lc.t.Helper()
	lc.cache = lc.rebuild(lc.server, nil)
}

// show makes the cache show the server's current version of obj, and nothing else new.
func (lc *laggingCluster) show(obj client.Object) {
	lc.t.Helper()
	cur := obj.DeepCopyObject().(client.Object)
	if err := lc.server.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		lc.t.Fatal(err)
	}
	lc.cache = lc.rebuild(lc.cache, cur)
}

// rebuild returns a cache holding the nodes and Allocations from, plus extra.
func (lc *laggingCluster) rebuild(from client.Client, extra client.Object) client.WithWatch {
	lc.t.Helper()
	ctx := context.Background()
	var allocs v1alpha1.AllocationList
	var nodes corev1.NodeList
	for _, l := range []client.ObjectList{&allocs, &nodes} {
		if err := from.List(ctx, l); err != nil {
			lc.t.Fatal(err)
		}
	}
	var objs []client.Object
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	for i := range allocs.Items {
		objs = append(objs, &allocs.Items[i])
	}
	if extra != nil {
		objs = append(objs, extra)
	}
	return fake.NewClientBuilder().WithScheme(lc.server.Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
}

func queuedAllocation(name string, gpus int32, created time.Time) *v1alpha1.Allocation {
	a := &v1alpha1.Allocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.AllocationSpec{
			Job:     v1alpha1.JobReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: name},
			Queue:   "default",
			PodSets: []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: gpus}},
		},
	}
	a.Status.Phase = v1alpha1.AllocationQueued
	return a
}

// TestSnapshotAssumesOwnWrites: the snapshot comes from a cache that lags behind the
// scheduler's writes. A job admitted in one cycle still holds its GPUs in the next cycle's
// snapshot although the cache shows it Queued, so no second job is promised the same GPUs;
// once the cache shows the write the assumption is dropped.
func TestSnapshotAssumesOwnWrites(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	lc := newLaggingCluster(t, node, queuedAllocation("a", 8, utiltesting.Epoch))
	conf := &configv1.Configuration{}
	conf.Default()
	pol, err := policies.ByName("fifo")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Scheduler{Client: lc.client, Reader: lc.server, Clock: clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)), Config: conf, Metrics: metrics.New(), Policy: pol})

	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	// A job submitted earlier (FIFO puts it first) reaches the cache; a's admission does not.
	b := queuedAllocation("b", 8, utiltesting.Epoch.Add(-time.Minute))
	if err := lc.server.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	lc.show(b)
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	used := func() (admitted []string, gpus int32) {
		var list v1alpha1.AllocationList
		if err := lc.server.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if allocation.HoldsGPUs(&list.Items[i]) {
				admitted = append(admitted, list.Items[i].Name)
				gpus += allocation.GPUsByNode(list.Items[i].Status.Placement)["n"]
			}
		}
		return admitted, gpus
	}
	if admitted, gpus := used(); gpus > 8 || len(admitted) != 1 || admitted[0] != "a" {
		t.Fatalf("admitted %v holding %d GPUs of node n's 8, want only a", admitted, gpus)
	}
	if s.assumed.len() != 1 {
		t.Errorf("%d assumptions, want 1 (a's admission)", s.assumed.len())
	}
	lc.sync()
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s.assumed.len() != 0 {
		t.Errorf("%d assumptions after the cache caught up, want 0", s.assumed.len())
	}
	if admitted, gpus := used(); gpus > 8 || len(admitted) != 1 {
		t.Fatalf("admitted %v holding %d GPUs of node n's 8 after the cache caught up", admitted, gpus)
	}
	// An Allocation gone from the cache (its job deleted) is forgotten.
	s.assumed.assume(queuedAllocation("gone", 1, utiltesting.Epoch))
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s.assumed.len() != 0 {
		t.Errorf("an assumption of a deleted Allocation is kept")
	}
}
