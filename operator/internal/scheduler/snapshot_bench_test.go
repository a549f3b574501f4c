package scheduler

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
)

// storeClient reads nodes, pods and Allocations from informer stores as the manager's cache
// reader does with UnsafeDisableDeepCopy: the objects' structs are copied into the list's
// items, not deep-copied.
type storeClient struct {
	client.Client
	stores map[string]toolscache.Store
}

func (c storeClient) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	var kind string
	switch list.(type) {
	case *corev1.NodeList:
		kind = "nodes"
	case *corev1.PodList:
		kind = "pods"
	case *v1alpha1.AllocationList:
		kind = "allocations"
	}
	st, ok := c.stores[kind]
	if !ok {
		return fmt.Errorf("no store for %T", list)
	}
	items := st.List()
	objs := make([]runtime.Object, len(items))
	for i, o := range items {
		objs[i] = o.(runtime.Object)
	}
	return apimeta.SetList(list, objs)
}

// scaleStores returns stores holding nodes of 8 GPUs, jobs one-GPU Allocations and a
// labelled, bound pod for each of the first running of them (Admitted on a node).
func scaleStores(nodes, jobs, running int) map[string]toolscache.Store {
	st := map[string]toolscache.Store{}
	for _, k := range []string{"nodes", "pods", "allocations"} {
		st[k] = toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	}
	for i := range nodes {
		_ = st["nodes"].Add(new(gpuNode(fmt.Sprintf("node-%04d", i), 8)))
	}
	for i := range jobs {
		name := fmt.Sprintf("job-%05d", i)
		if i >= running {
			a := placedAlloc(name, v1alpha1.AllocationQueued, "", 1)
			_ = st["allocations"].Add(&a)
			continue
		}
		node := fmt.Sprintf("node-%04d", i%nodes)
		a := placedAlloc(name, v1alpha1.AllocationAdmitted, node, 1)
		_ = st["allocations"].Add(&a)
		p := boundPod(name+"-master-0", node, name, 1, corev1.PodRunning)
		_ = st["pods"].Add(&p)
	}
	return st
}

// BenchmarkSnapshot measures a cycle's snapshot (Scheduler.snapshot) at the scale of make
// scale-cluster, with every job running (1,000 nodes of 8 GPUs, 5,000 Allocations and
// 5,000 pods) and with every job queued (no pods). The pods are counted twice as the
// operator does (the pods of its jobs, for their progress, and the bound pods, for the GPUs
// they hold). "store" reads the informers' stores as the operator does; "client" lists
// through a cache client that copies each object's struct.
func BenchmarkSnapshot(b *testing.B) {
	for _, running := range []int{5000, 0} {
		b.Run(fmt.Sprintf("running=%d", running), func(b *testing.B) { benchmarkSnapshot(b, running) })
	}
}

// benchmarkSnapshot is BenchmarkSnapshot with running of the 5,000 jobs Admitted, each with
// its pod, and the rest Queued.
func benchmarkSnapshot(b *testing.B, running int) {
	st := scaleStores(1000, 5000, running)
	conf := &configv1.Configuration{}
	conf.Default()
	clk := clocktesting.NewFakeClock(utiltesting.Epoch)
	c := storeClient{stores: st}
	for _, tc := range []struct {
		name string
		sch  Scheduler
	}{
		{"client", Scheduler{Client: c, Reader: c, Assumed: NewAssumed(clk), Clock: clk, Config: conf, Metrics: metrics.New(),
			BoundPods: PodReaderLister(c, client.UnsafeDisableDeepCopy)}},
		{"store", Scheduler{Client: c, Reader: c, Assumed: NewAssumed(clk), Clock: clk, Config: conf, Metrics: metrics.New(),
			Allocations: func(context.Context) ([]*v1alpha1.Allocation, error) {
				return StoreItems[*v1alpha1.Allocation](st["allocations"])
			},
			Nodes:     func(context.Context) ([]*corev1.Node, error) { return StoreItems[*corev1.Node](st["nodes"]) },
			JobPods:   func(context.Context) ([]*corev1.Pod, error) { return StoreItems[*corev1.Pod](st["pods"]) },
			BoundPods: func(context.Context) ([]*corev1.Pod, error) { return StoreItems[*corev1.Pod](st["pods"]) },
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := New(tc.sch)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				snap, _, err := s.snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(snap.Jobs) != 5000 || len(snap.Nodes) != 1000 {
					b.Fatalf("snapshot of %d jobs on %d nodes, want 5000 on 1000", len(snap.Jobs), len(snap.Nodes))
				}
			}
		})
	}
}
