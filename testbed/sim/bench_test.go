package sim

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// PhillyCluster is the cluster the philly.csv benchmark and test use: 112 nodes x 8 GPUs
// (896 GPUs). The trace holds 3.52e9 GPU-seconds of service over 108.9 days, an average
// demand of 374 GPUs (42% of 896); its October peak (47,192 of the 82,247 jobs, 438,318
// GPU-hours) averages 599 GPUs (67%), so queues form in bursts and drain. Half the size
// (64x8) is loaded past 100% in October and FIFO's queue grows without bound.
const PhillyCluster = "112x8"

// benchCluster is the cluster the benchmarks run philly.csv on (default PhillyCluster).
var benchCluster = flag.String("sim.cluster", PhillyCluster, "BenchmarkSimulate: the cluster to run philly.csv on")

func loadPhilly(tb testing.TB) ([]traces.Job, traces.Cluster) {
	tb.Helper()
	jobs, err := traces.ReadAll(tracePath(tb, "philly-adaptdl/philly.csv"), traces.Options{Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	cluster := PhillyCluster
	if _, ok := tb.(*testing.B); ok {
		cluster = *benchCluster
	}
	c, err := traces.ParseCluster(cluster)
	if err != nil {
		tb.Fatal(err)
	}
	return jobs, c
}

// BenchmarkSimulate runs the full philly.csv (82,247 jobs) on PhillyCluster through each
// registered policy and reports jobs/s and events/s.
func BenchmarkSimulate(b *testing.B) {
	jobs, cluster := loadPhilly(b)
	for _, name := range policies.Names() {
		b.Run(name, func(b *testing.B) {
			var r *metrics.Run
			for b.Loop() {
				r = runTrace(b, jobs, cluster, name, DefaultConfig())
			}
			s := metrics.Summarize(r)
			b.ReportMetric(float64(len(jobs))/r.Wall.Seconds(), "jobs/s")
			b.ReportMetric(float64(r.Events)/r.Wall.Seconds(), "events/s")
			b.ReportMetric(s.Wait.Mean, "mean-wait-s")
			b.ReportMetric(s.Utilization, "util")
		})
	}
}

// BenchmarkSimulateAll runs every registered policy concurrently on philly.csv, as
// `pickyman simulate` does, and reports the wall time of the whole comparison.
func BenchmarkSimulateAll(b *testing.B) {
	jobs, cluster := loadPhilly(b)
	factory := policies.ByName
	var wall time.Duration
	for b.Loop() {
		c, err := NewComparison(cluster, jobs, policies.Names(), factory, DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		wall = time.Since(start)
	}
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(float64(len(policies.Names())), "policies")
}

// phillyAll runs the PickyMan ablations on the full philly.csv too; by default TestPhilly
// runs the five baselines and pickyman, which keeps make test within CI's time.
var phillyAll = flag.Bool("philly.all", false, "TestPhilly: run every registered policy, ablations included")

// TestPhilly runs the full philly.csv through the baselines and pickyman (every registered
// policy with -philly.all) with invariants on. It is long: it does not run with -short or
// under the race detector (make test-unit); make test-sim runs it.
func TestPhilly(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("long: run by make test-sim (without -short and -race)")
	}
	jobs, cluster := loadPhilly(t)
	for _, name := range policies.Names() {
		if !*phillyAll && strings.HasPrefix(name, "pickyman-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Check = true
			r := runTrace(t, jobs, cluster, name, cfg)
			s := metrics.Summarize(r)
			if s.Jobs+s.Rejected != len(jobs) || s.Jobs < len(jobs)*99/100 {
				t.Errorf("%d finished and %d rejected of %d jobs", s.Jobs, s.Rejected, len(jobs))
			}
			if s.Utilization <= 0 || s.Utilization > 1 {
				t.Errorf("utilization %v", s.Utilization)
			}
			t.Logf("philly: %s: jobs %d rejected %d mean wait %.0f s p99 wait %.0f s mean JCT %.0f s makespan %.0f s preemptions %d GPU-h lost %.1f util %.3f events %d",
				name, s.Jobs, s.Rejected, s.Wait.Mean, s.Wait.P99, s.JCT.Mean, s.Makespan, s.Preemptions, s.GPUHoursLost, s.Utilization, r.Events)
		})
	}
}
