package pickyman

import (
	"syscall"
	"testing"
	"time"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// BenchmarkSchedule measures one decision with 10,000 running and 5,000 waiting jobs on
// 2,000 nodes of 8 GPUs (target: under 10 ms). Besides wall time per decision it reports
// the process CPU time per decision (cpu-ns/op), which stays meaningful on a shared,
// oversubscribed machine where wall time is not.
func BenchmarkSchedule(b *testing.B) {
	s := utiltesting.RandomSnapshot(42, utiltesting.RandomConfig{
		Nodes: 2000, GPUsPerNode: 8, Models: []string{"A100", "V100"},
		Running: 10120, Queued: 5000, Suspending: 0.01,
	})
	enrich(s, 42)
	running := 0
	for _, j := range s.Jobs {
		if j.Phase == sched.Running {
			running++
		}
	}
	if running < 10000 {
		b.Fatalf("snapshot has %d running jobs, want 10000", running)
	}
	p := New(DefaultOptions())
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	arrival := sched.Event{Kind: sched.EventSubmitted, Time: s.Now, Job: s.Jobs[len(s.Jobs)-1]}
	for i := 0; i < b.N; i++ {
		// An arrival before each decision, so that every cycle is a full one.
		p.Observe(arrival)
		p.Schedule(s)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
