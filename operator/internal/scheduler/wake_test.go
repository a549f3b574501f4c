package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clocktesting "k8s.io/utils/clock/testing"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// waker is a policy that decides nothing and asks to be woken after a fixed delay.
type waker struct {
	clock *clocktesting.FakeClock
	after time.Duration
	calls atomic.Int32
}

func (*waker) Name() string { return "waker" }
func (w *waker) Schedule(*sched.Snapshot) sched.Decisions {
	w.calls.Add(1)
	return sched.Decisions{}
}
func (w *waker) NextWake() time.Time { return w.clock.Now().Add(w.after) }

// TestStartRequeuesAtTheWakeTime: the scheduler runs a cycle at the time the policy names
// (sched.Waker), long before the resync interval.
func TestStartRequeuesAtTheWakeTime(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	cfg := &configv1.Configuration{}
	cfg.Default()
	cfg.ScheduleInterval.Duration = time.Hour
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &waker{clock: fc, after: 5 * time.Second}
	sch := New(Scheduler{Client: c, Reader: c, Clock: fc, Config: cfg, Metrics: metrics.New(), Policy: p})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sch.Start(ctx) }()
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
	// The first cycle runs at once; then the resync ticker and the wake-up timer wait.
	waitFor("the first cycle and its wake-up timer", func() bool { return p.calls.Load() == 1 && fc.Waiters() == 2 })
	fc.Step(4 * time.Second)
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("%d cycles before the wake-up time, want 1", n)
	}
	fc.Step(time.Second)
	waitFor("the cycle at the wake-up time", func() bool { return p.calls.Load() == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
