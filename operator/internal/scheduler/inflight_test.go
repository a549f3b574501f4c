package scheduler

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// gate holds every Allocation status write until opened.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// client returns c with its Allocation status writes held at the gate.
func (g *gate) client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*v1alpha1.Allocation); ok {
				<-g.ch
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
}

// swapsLanded waits until every fence swap s has queued has ended: a batch swaps the fence
// in its own goroutine, before its gated writes, and another scheduler's cycle that should
// see the swap must not run before it.
func swapsLanded(s *Scheduler) {
	turn, done := s.Fence.queue()
	<-turn
	done()
}

func gpuNodeObj(name string) *corev1.Node {
	n := gpuNode(name, 8)
	return &n
}

// promisedOn returns the GPUs the Allocations in c hold on each node, and the jobs holding
// them.
func promisedOn(t *testing.T, c client.Reader) (map[string]int32, []string) {
	t.Helper()
	var list v1alpha1.AllocationList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int32{}
	var jobs []string
	for i := range list.Items {
		if a := &list.Items[i]; allocation.HoldsGPUs(a) {
			jobs = append(jobs, a.Name)
			for n, g := range allocation.GPUsByNode(a.Status.Placement) {
				gpus[n] += g
			}
		}
	}
	return gpus, jobs
}

// newFencedScheduler returns a scheduler of policy on c (no cache: it lists from c) with the
// fence, named id.
func newFencedScheduler(t *testing.T, c client.Client, clk *clocktesting.FakeClock, policy, id string) *Scheduler {
	t.Helper()
	conf := &configv1.Configuration{}
	conf.Default()
	pol, err := policies.ByName(policy)
	if err != nil {
		t.Fatal(err)
	}
	return New(Scheduler{Client: c, Reader: c, Clock: clk, Config: conf, Metrics: metrics.New(), Policy: pol,
		Fence: &Fence{Reader: c, Client: c, Clock: clk, Key: types.NamespacedName{Namespace: "pickyman-system", Name: FenceName}, Identity: id}})
}

// TestCycleReturnsBeforeItsWrites: a cycle sends its Allocation writes and returns; the
// next cycle runs while the admission is still in flight and the cache shows the job
// Queued. Its snapshot shows the admission as the write will leave it, so a job that FIFO
// puts first is not promised the same GPUs; once the write ends, the next cycle sees the
// outcome.
func TestCycleReturnsBeforeItsWrites(t *testing.T) {
	ctx := context.Background()
	lc := newLaggingCluster(t, gpuNodeObj("n"), queuedAllocation("a", 8, utiltesting.Epoch))
	g := newGate()
	defer g.open()
	lc.client = g.client(lc.client)
	s, _ := newAssumingScheduler(t, lc, "fifo", clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)))

	b, err := s.cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		t.Fatal("the cycle sent no writes; want a's admission")
	}
	select {
	case <-b.done:
		t.Fatal("the batch ended with its write held at the gate")
	default:
	}
	if !s.inflight.has("ns/a") {
		t.Fatal("a's admission is not recorded as in flight")
	}
	// A job submitted earlier reaches the cache; FIFO puts it first.
	early := queuedAllocation("early", 8, utiltesting.Epoch.Add(-time.Minute))
	if err := lc.server.Create(ctx, early); err != nil {
		t.Fatal(err)
	}
	lc.show(early)
	b2, err := s.cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b2 != nil {
		t.Errorf("the cycle with a's admission in flight sent %d steps of writes; node n has no GPU left", len(b2.steps))
	}
	g.open()
	if err := b.wait(); err != nil {
		t.Fatal(err)
	}
	if b2 != nil {
		_ = b2.wait()
	}
	if s.inflight.len() != 0 {
		t.Errorf("%d writes still recorded in flight after their batch ended", s.inflight.len())
	}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	gpus, jobs := promisedOn(t, lc.server)
	if gpus["n"] > 8 || len(jobs) != 1 || jobs[0] != "a" {
		t.Fatalf("node n promised %d GPUs of 8 to %v, want 8 to a", gpus["n"], jobs)
	}
}

// TestFenceCarriesWritesInFlight: scheduler a's first cycle admits j1 on one node and its
// write is still in flight when a's second cycle admits j2 on the other and swaps the
// fence. Scheduler b (leader election off) then reads the fence: it must still count j1's
// promise, which no write has carried out yet, or it starts a high-priority job on j1's
// GPUs.
func TestFenceCarriesWritesInFlight(t *testing.T) {
	ctx := context.Background()
	lc := newLaggingCluster(t, gpuNodeObj("n1"), gpuNodeObj("n2"), queuedAllocation("j1", 8, utiltesting.Epoch))
	g := newGate()
	defer g.open()
	held := g.client(lc.server)
	clk := clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour))
	// kueue: priority first.
	a, b := newFencedScheduler(t, held, clk, "kueue", "a"), newFencedScheduler(t, lc.server, clk, "kueue", "b")

	b1, err := a.cycle(ctx)
	if err != nil || b1 == nil {
		t.Fatalf("a's first cycle: batch %v, %v; want j1's admission sent", b1, err)
	}
	if err := lc.server.Create(ctx, queuedAllocation("j2", 8, utiltesting.Epoch.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	b2, err := a.cycle(ctx)
	if err != nil || b2 == nil {
		t.Fatalf("a's second cycle: batch %v, %v; want j2's admission sent", b2, err)
	}
	swapsLanded(a)
	h := queuedAllocation("h", 8, utiltesting.Epoch.Add(2*time.Minute))
	h.Spec.Priority = 100
	if err := lc.server.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := b.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	g.open()
	for _, bt := range []*batch{b1, b2} {
		if err := bt.wait(); err != nil {
			t.Fatal(err)
		}
	}
	gpus, jobs := promisedOn(t, lc.server)
	for _, n := range []string{"n1", "n2"} {
		if gpus[n] > 8 {
			t.Errorf("node %s promised %d GPUs of 8 (jobs holding GPUs: %v)", n, gpus[n], jobs)
		}
	}
	if len(jobs) != 2 {
		t.Errorf("jobs holding GPUs: %v, want j1 and j2", jobs)
	}
}

// TestLimitStartsCountsRoomLeft: the starts kept fit the room the promises in flight leave;
// with none left, no start is kept, however small.
func TestLimitStartsCountsRoomLeft(t *testing.T) {
	d := sched.Decisions{Starts: []sched.Start{
		{JobID: "a", Placement: []sched.Slot{{Node: "n1", Workers: 1, GPUs: 1}, {Node: "n2", Workers: 1, GPUs: 1}}},
		{JobID: "b", Placement: []sched.Slot{{Node: "n3", Workers: 1, GPUs: 1}}},
	}}
	for _, c := range []struct {
		room    int
		kept    int
		limited bool
	}{{room: 3, kept: 2}, {room: 2, kept: 1, limited: true}, {room: 1, kept: 1, limited: true}, {room: 0, kept: 0, limited: true}, {room: -5, kept: 0, limited: true}} {
		got, limited := limitStarts(d, c.room)
		if len(got.Starts) != c.kept || limited != c.limited {
			t.Errorf("room %d: kept %d starts (limited %v), want %d (limited %v)", c.room, len(got.Starts), limited, c.kept, c.limited)
		}
	}
}

// TestFenceKeepsAnothersPromises: scheduler b's admission of j1 is in flight when scheduler
// a counts b's promise, admits j2 on the other node and swaps the fence. a's next cycle
// reads a fence that a swapped last: b's promise must still be in it, or a starts a
// high-priority job on the GPUs b promised j1.
func TestFenceKeepsAnothersPromises(t *testing.T) {
	ctx := context.Background()
	lc := newLaggingCluster(t, gpuNodeObj("n1"), gpuNodeObj("n2"), queuedAllocation("j1", 8, utiltesting.Epoch))
	g := newGate()
	defer g.open()
	clk := clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour))
	a, b := newFencedScheduler(t, lc.server, clk, "kueue", "a"), newFencedScheduler(t, g.client(lc.server), clk, "kueue", "b")

	held, err := b.cycle(ctx)
	if err != nil || held == nil {
		t.Fatalf("b's cycle: batch %v, %v; want j1's admission sent", held, err)
	}
	swapsLanded(b)
	// j2 goes before j1 in a's order, so a does not decide on j1 itself.
	j2 := queuedAllocation("j2", 8, utiltesting.Epoch.Add(time.Minute))
	j2.Spec.Priority = 50
	if err := lc.server.Create(ctx, j2); err != nil {
		t.Fatal(err)
	}
	if err := a.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, jobs := promisedOn(t, lc.server); len(jobs) != 1 || jobs[0] != "j2" {
		t.Fatalf("after a's first cycle jobs holding GPUs: %v, want j2 (j1's admission by b in flight)", jobs)
	}
	h := queuedAllocation("h", 8, utiltesting.Epoch.Add(2*time.Minute))
	h.Spec.Priority = 100
	if err := lc.server.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := a.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	g.open()
	if err := held.wait(); err != nil {
		t.Fatal(err)
	}
	gpus, jobs := promisedOn(t, lc.server)
	for _, n := range []string{"n1", "n2"} {
		if gpus[n] > 8 {
			t.Errorf("node %s promised %d GPUs of 8 (jobs holding GPUs: %v)", n, gpus[n], jobs)
		}
	}
}

// TestSwapsFollowOwnSwaps: a cycle reads the fence while the swap of the cycle before it is
// still held; its own swap goes after that one, against the Lease it left, and does not
// fail on a change that was this scheduler's own. Both jobs are admitted and no cycle is
// counted as fenced.
func TestSwapsFollowOwnSwaps(t *testing.T) {
	ctx := context.Background()
	lc := newLaggingCluster(t, gpuNodeObj("n1"), gpuNodeObj("n2"), queuedAllocation("j1", 8, utiltesting.Epoch))
	g := newGate()
	defer g.open()
	held := interceptor.NewClient(lc.server, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok {
				<-g.ch
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	s := newFencedScheduler(t, held, clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)), "fifo", "a")
	b1, err := s.cycle(ctx)
	if err != nil || b1 == nil {
		t.Fatalf("first cycle: batch %v, %v", b1, err)
	}
	if err := lc.server.Create(ctx, queuedAllocation("j2", 8, utiltesting.Epoch.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	b2, err := s.cycle(ctx)
	if err != nil || b2 == nil {
		t.Fatalf("second cycle: batch %v, %v", b2, err)
	}
	g.open()
	for _, b := range []*batch{b1, b2} {
		if err := b.wait(); err != nil {
			t.Fatal(err)
		}
	}
	var m dto.Metric
	if err := s.Metrics.FencedCycles.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 0 {
		t.Errorf("%v cycles fenced off by this scheduler's own swap", n)
	}
	gpus, jobs := promisedOn(t, lc.server)
	if len(jobs) != 2 || gpus["n1"] > 8 || gpus["n2"] > 8 {
		t.Errorf("jobs holding GPUs: %v (GPUs by node %v), want j1 and j2, one on each node", jobs, gpus)
	}
}

// TestCycleLeavesCachedAllocationsUnchanged: the snapshot reads the cached Allocations
// without copying them, so a cycle that starts a job and drops an expired reservation must
// change only copies: the cache's objects are as they were.
func TestCycleLeavesCachedAllocationsUnchanged(t *testing.T) {
	ctx := context.Background()
	expired := queuedAllocation("r", 16, utiltesting.Epoch.Add(-time.Hour))
	at := metav1.NewTime(utiltesting.Epoch)
	expired.Status.Reserved = []v1alpha1.NodeAssignment{{PodSet: "Master", Node: "n", Pods: 1, GPUs: 8}}
	expired.Status.ReservedAt = &at
	lc := newLaggingCluster(t, gpuNodeObj("n"), queuedAllocation("a", 8, utiltesting.Epoch), expired)
	// Reservations time out after an hour (the default).
	s, _ := newAssumingScheduler(t, lc, "fifo", clocktesting.NewFakeClock(utiltesting.Epoch.Add(2*time.Hour)))
	var list v1alpha1.AllocationList
	if err := lc.cache.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var cached, before []*v1alpha1.Allocation
	for i := range list.Items {
		cached = append(cached, &list.Items[i])
		before = append(before, list.Items[i].DeepCopy())
	}
	s.Allocations = func(context.Context) ([]*v1alpha1.Allocation, error) { return slices.Clone(cached), nil }
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range cached {
		if !equality.Semantic.DeepEqual(cached[i], before[i]) {
			t.Errorf("the cycle changed the cached Allocation %s: %s", cached[i].Name, cmp.Diff(before[i], cached[i]))
		}
	}
	got := &v1alpha1.Allocation{}
	if err := lc.server.Get(ctx, client.ObjectKeyFromObject(expired), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ReservedAt != nil {
		t.Errorf("the expired reservation's removal was not written")
	}
	if err := lc.server.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "a"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.AllocationAdmitted {
		t.Errorf("a is %s, want Admitted", got.Status.Phase)
	}
}

// countingPolicy counts its decisions.
type countingPolicy struct {
	sched.Policy
	calls atomic.Int32
}

func (p *countingPolicy) Schedule(s *sched.Snapshot) sched.Decisions {
	p.calls.Add(1)
	return p.Policy.Schedule(s)
}

// startScheduler runs s until stop, which reports an error Start returns.
func startScheduler(t *testing.T, s *Scheduler) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	return ctx, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestCycleWaitsForSwap: while a batch's fence swap is in flight, the scheduler runs no
// cycle; the swap's end wakes it, and the next cycle decides on everything that arrived
// meanwhile in one batch. Swaps go one at a time, so a cycle per arrival would queue a swap
// per arrival behind them (a 5,000-job run made 1,920 swaps of 240 ms each, one after
// another, and admitted at their pace).
func TestCycleWaitsForSwap(t *testing.T) {
	lc := newLaggingCluster(t, gpuNodeObj("n1"), gpuNodeObj("n2"), queuedAllocation("j1", 8, utiltesting.Epoch))
	g := newGate()
	defer g.open()
	var swaps atomic.Int32
	held := interceptor.NewClient(lc.server, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok {
				<-g.ch
				swaps.Add(1)
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	s := newFencedScheduler(t, held, clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)), "fifo", "a")
	p := &countingPolicy{Policy: s.Policy}
	s.Policy = p
	ctx, stop := startScheduler(t, s)
	defer stop()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the first cycle", func() bool { return p.calls.Load() == 1 })
	for _, name := range []string{"j2", "j3"} {
		if err := lc.server.Create(ctx, queuedAllocation(name, 4, utiltesting.Epoch.Add(time.Minute))); err != nil {
			t.Fatal(err)
		}
		s.wakeUp()
		time.Sleep(50 * time.Millisecond)
	}
	if n := p.calls.Load(); n != 1 {
		t.Errorf("%d cycles while the first one's swap was in flight, want 1", n)
	}
	g.open()
	admitted := func(name string) bool {
		a := &v1alpha1.Allocation{}
		return lc.server.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, a) == nil && a.Status.Phase == v1alpha1.AllocationAdmitted
	}
	waitFor("every job admitted", func() bool { return admitted("j1") && admitted("j2") && admitted("j3") })
	if n := swaps.Load(); n != 2 {
		t.Errorf("%d fence swaps, want 2: the first cycle's, and one for both jobs that arrived during it", n)
	}
}

// TestSwapTimesOut: a fence swap that never returns (a request the API server holds) ends at
// Fence.SwapTimeout with nothing of its batch written, and the next cycle decides again.
// While a swap is in flight no cycle runs (TestCycleWaitsForSwap), so without the bound one
// hung request would stop the scheduler.
func TestSwapTimesOut(t *testing.T) {
	lc := newLaggingCluster(t, gpuNodeObj("n1"), queuedAllocation("j1", 8, utiltesting.Epoch))
	var swaps atomic.Int32
	hung := interceptor.NewClient(lc.server, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok && swaps.Add(1) == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	s := newFencedScheduler(t, hung, clocktesting.NewFakeClock(utiltesting.Epoch.Add(time.Hour)), "fifo", "a")
	s.Fence.SwapTimeout = 100 * time.Millisecond
	ctx, stop := startScheduler(t, s)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := &v1alpha1.Allocation{}
		if err := lc.server.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "j1"}, a); err == nil && a.Status.Phase == v1alpha1.AllocationAdmitted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("j1 not admitted after a hung swap (%d swaps tried)", swaps.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if n := swaps.Load(); n != 2 {
		t.Errorf("%d fence swaps, want 2: the hung one, and the next cycle's", n)
	}
}
