package sim

import (
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// PhillyCluster is the cluster the philly.csv benchmark and test use: 64 nodes x 8 GPUs.
// The trace holds 3.52e9 GPU-seconds of service over 108.9 days, an average demand of 374
// GPUs, so 512 GPUs are loaded to about 73% on average, with queues in the October peak
// (47,192 of the 82,247 jobs arrive that month) that drain afterwards.
const PhillyCluster = "64x8"

func loadPhilly(tb testing.TB) ([]traces.Job, traces.Cluster) {
	tb.Helper()
	jobs, err := traces.ReadAll(tracePath(tb, "philly-adaptdl/philly.csv"), traces.Options{Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := traces.ParseCluster(PhillyCluster)
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
