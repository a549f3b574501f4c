package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
	client client.WithWatch
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

// newAssumingScheduler returns a scheduler of policy on lc whose snapshot comes from the
// cache with its own writes assumed, and the assumptions.
func newAssumingScheduler(t *testing.T, lc *laggingCluster, policy string, clk *clocktesting.FakeClock) (*Scheduler, *Assumed) {
	t.Helper()
	conf := &configv1.Configuration{}
	conf.Default()
	pol, err := policies.ByName(policy)
	if err != nil {
		t.Fatal(err)
	}
	as := NewAssumed(clk)
	return New(Scheduler{Client: as.Client(lc.client), Reader: lc.server, Assumed: as, Clock: clk, Config: conf, Metrics: metrics.New(), Policy: pol}), as
}

// TestSnapshotAssumesOwnWrites: the snapshot comes from a cache that lags behind the
// scheduler's writes. A job admitted in one cycle still holds its GPUs in the next cycle's
// snapshot although the cache shows it Queued, so no second job is promised the same GPUs;
// once the cache shows the write the assumption is dropped.
func TestSnapshotAssumesOwnWrites(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	lc := newLaggingCluster(t, node, queuedAllocation("a", 8, utiltesting.Epoch))
	clk := clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour))
	s, as := newAssumingScheduler(t, lc, "fifo", clk)

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
	if as.Len() != 1 {
		t.Errorf("%d assumptions, want 1 (a's admission)", as.Len())
	}
	lc.sync()
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if as.Len() != 0 {
		t.Errorf("%d assumptions after the cache caught up, want 0", as.Len())
	}
	if admitted, gpus := used(); gpus > 8 || len(admitted) != 1 {
		t.Fatalf("admitted %v holding %d GPUs of node n's 8 after the cache caught up", admitted, gpus)
	}
	// An assumed Allocation that neither the cache nor the API server holds (its job deleted
	// meanwhile) stands for Grace, then is forgotten.
	gone := queuedAllocation("gone", 1, utiltesting.Epoch)
	gone.ResourceVersion = "1"
	as.Assume(gone)
	if _, allocs, err := s.snapshot(ctx); err != nil {
		t.Fatal(err)
	} else if _, ok := allocs["ns/gone"]; !ok {
		t.Errorf("an Allocation written and not yet cached is not in the snapshot")
	}
	clk.Step(as.Grace)
	if _, allocs, err := s.snapshot(ctx); err != nil {
		t.Fatal(err)
	} else if _, ok := allocs["ns/gone"]; ok {
		t.Errorf("an Allocation gone from the API server is in the snapshot after Grace")
	}
	if as.Len() != 0 {
		t.Errorf("an assumption of a deleted Allocation is kept")
	}
}

// TestSnapshotHoldsCreationNotCached: a controller creates a job's Allocation and queues
// its Submitted event; the cache does not show the creation yet. The cycle that delivers
// the event must see the job (a policy that skips unchanged cycles would otherwise never
// look at it again): it is admitted at once.
func TestSnapshotHoldsCreationNotCached(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	lc := newLaggingCluster(t, node)
	s, _ := newAssumingScheduler(t, lc, "fifo", clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)))
	// The job controller writes through the same (recording) client.
	a := queuedAllocation("new", 4, utiltesting.Epoch)
	if err := s.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.Allocation{}
	if err := lc.server.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.AllocationAdmitted {
		t.Errorf("a job whose creation the cache does not show yet: %s, want Admitted in the same cycle", got.Status.Phase)
	}
}

// TestSnapshotAfterUnknownWrite: an admission whose answer was lost (the write happened,
// the client saw a connection error) is not assumed; the next snapshot is listed from the
// API server, so the GPUs it took are not promised again although the cache lags.
func TestSnapshotAfterUnknownWrite(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	lc := newLaggingCluster(t, node, queuedAllocation("a", 8, utiltesting.Epoch))
	lost := true
	lc.client = interceptor.NewClient(lc.client, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			if err == nil && lost {
				lost = false
				return errors.New("read tcp: connection reset by peer")
			}
			return err
		},
	})
	s, as := newAssumingScheduler(t, lc, "fifo", clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)))
	if err := s.Cycle(ctx); err == nil {
		t.Fatal("the admission's lost answer was not reported")
	}
	if as.Len() != 0 {
		t.Errorf("a write of unknown outcome is assumed")
	}
	b := queuedAllocation("b", 8, utiltesting.Epoch.Add(-time.Minute))
	if err := lc.server.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	lc.show(b)
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.AllocationList
	if err := lc.server.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var admitted []string
	for i := range list.Items {
		if allocation.HoldsGPUs(&list.Items[i]) {
			admitted = append(admitted, list.Items[i].Name)
		}
	}
	if len(admitted) != 1 || admitted[0] != "a" {
		t.Errorf("admitted %v on node n's 8 GPUs, want only a (the write of unknown outcome)", admitted)
	}
}

// TestAssumedKeepsLaterWrite: two writes of one Allocation recorded out of order (two
// workers): the later resourceVersion stays assumed until the cache shows it.
func TestAssumedKeepsLaterWrite(t *testing.T) {
	as := NewAssumed(clocktesting.NewFakeClock(utiltesting.Epoch))
	later := queuedAllocation("a", 1, utiltesting.Epoch)
	later.ResourceVersion, later.Status.Phase = "12", v1alpha1.AllocationAdmitted
	earlier := queuedAllocation("a", 1, utiltesting.Epoch)
	earlier.ResourceVersion = "11"
	as.Assume(later)
	as.Assume(earlier)
	cached := queuedAllocation("a", 1, utiltesting.Epoch)
	cached.ResourceVersion = "10"
	items, _ := as.overlay([]*v1alpha1.Allocation{cached.DeepCopy()})
	if len(items) != 1 || items[0].ResourceVersion != "12" || items[0].Status.Phase != v1alpha1.AllocationAdmitted {
		t.Errorf("overlay = %+v, want the write at resourceVersion 12", items)
	}
	cached.ResourceVersion = "12"
	if items, _ := as.overlay([]*v1alpha1.Allocation{cached.DeepCopy()}); items[0].Status.Phase != v1alpha1.AllocationQueued || as.Len() != 0 {
		t.Errorf("the cache caught up, but the assumption is kept (%d held)", as.Len())
	}
}

// TestCycleStagesMeasured: a cycle that admits a job observes each of its stages once.
func TestCycleStagesMeasured(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	lc := newLaggingCluster(t, node, queuedAllocation("a", 8, utiltesting.Epoch))
	s, _ := newAssumingScheduler(t, lc, "fifo", clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)))
	if err := s.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"snapshot", "decide", "act", "writes"} {
		var m dto.Metric
		if err := s.Metrics.CycleStage.WithLabelValues(stage).(prometheus.Histogram).Write(&m); err != nil {
			t.Fatal(err)
		}
		if n := m.GetHistogram().GetSampleCount(); n != 1 {
			t.Errorf("stage %s observed %d times in one cycle, want 1", stage, n)
		}
	}
}

// TestCycleWaitsForQueued: an Allocation that the job controller has created but not yet
// queued (no phase) is not admitted: the job controller's status write is about to change
// it, and an admission decided on the version without a phase would fail on its
// resourceVersion (1,081 to 1,100 Allocation status writes of a 5,000-job run met a
// conflict, fewer than 536 once the snapshot left such Allocations out). Once Queued it is
// admitted.
func TestCycleWaitsForQueued(t *testing.T) {
	ctx := context.Background()
	created := queuedAllocation("a", 8, utiltesting.Epoch)
	created.Status.Phase = ""
	lc := newLaggingCluster(t, gpuNodeObj("n"), created)
	s, _ := newAssumingScheduler(t, lc, "fifo", clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)))
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.Allocation{}
	if err := lc.server.Get(ctx, client.ObjectKeyFromObject(created), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "" {
		t.Fatalf("an Allocation not yet queued is %s after a cycle, want no phase", got.Status.Phase)
	}
	got.Status.Phase = v1alpha1.AllocationQueued
	if err := lc.server.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	lc.sync()
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lc.server.Get(ctx, client.ObjectKeyFromObject(created), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.AllocationAdmitted {
		t.Errorf("a queued Allocation is %s after a cycle, want Admitted", got.Status.Phase)
	}
}

// TestAssumedReadsOwnWrites: a Get of an Allocation through the assuming client, from a cache
// that lags behind the process's own write, returns the write. The job controller reads
// through it: without it a job reconciled again right after its Allocation's Queued status
// write (the Allocation's creation requeues the job) saw the cache's version without a phase
// and wrote Queued again, a conflict for almost every job of a 5,000-job run with 64 workers.
// A version the cache shows that is as new as the write, or newer, is read as it is.
func TestAssumedReadsOwnWrites(t *testing.T) {
	created := queuedAllocation("j1", 1, utiltesting.Epoch)
	created.Status = v1alpha1.AllocationStatus{}
	lc := newLaggingCluster(t, created)
	as := NewAssumed(clocktesting.NewFakeClock(utiltesting.Epoch))
	c := as.Client(lc.client)
	ctx := context.Background()
	key := client.ObjectKeyFromObject(created)
	a := &v1alpha1.Allocation{}
	if err := c.Get(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	a.Status.Phase = v1alpha1.AllocationQueued
	if err := c.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.Allocation{}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.AllocationQueued || got.ResourceVersion != a.ResourceVersion {
		t.Fatalf("read phase %q at resourceVersion %s from a cache behind the write at %s; want the write", got.Status.Phase, got.ResourceVersion, a.ResourceVersion)
	}
	// The read is a copy: changing it leaves the assumption as written.
	got.Status.Phase = v1alpha1.AllocationFinished
	again := &v1alpha1.Allocation{}
	if err := c.Get(ctx, key, again); err != nil || again.Status.Phase != v1alpha1.AllocationQueued {
		t.Fatalf("second read: %v, phase %q; want Queued", err, again.Status.Phase)
	}
	// Another writer's later version, once cached, is read as it is.
	other := again.DeepCopy()
	other.Status.Phase = v1alpha1.AllocationAdmitted
	if err := lc.server.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	lc.sync()
	if err := c.Get(ctx, key, got); err != nil || got.Status.Phase != v1alpha1.AllocationAdmitted {
		t.Fatalf("after the cache caught up: %v, phase %q; want Admitted", err, got.Status.Phase)
	}
}
