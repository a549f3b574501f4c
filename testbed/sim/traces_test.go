package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// tracePath returns the path of a shared trace file: under $PICKYMAN_TRACES, else
// ../../../shared/traces from this package. A missing file fails the test when CI is set
// and skips it otherwise.
func tracePath(tb testing.TB, rel string) string {
	tb.Helper()
	dir := os.Getenv("PICKYMAN_TRACES")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "traces")
	}
	p := filepath.Join(dir, rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("trace %s is missing: %v", p, err)
		}
		tb.Skipf("trace %s is missing (set CI to fail instead): %v", p, err)
	}
	return p
}

func runTrace(tb testing.TB, jobs []traces.Job, cluster traces.Cluster, policy string, cfg Config) *metrics.Run {
	tb.Helper()
	p, err := policies.ByName(policy)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := New(cluster, jobs, p, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := e.Run(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestTiresias60 runs the Tiresias 60-job trace on its own cluster spec (16 nodes x 4 GPUs)
// through every registered policy with invariants on.
func TestTiresias60(t *testing.T) {
	jobs, err := traces.ReadAll(tracePath(t, "tiresias/60_job.csv"), traces.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := traces.ParseCluster(tracePath(t, "tiresias/cluster_spec.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 60 {
		t.Fatalf("read %d jobs, want 60", len(jobs))
	}
	tight, err := traces.ParseCluster("4x4")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []traces.Cluster{cluster, tight} {
		for _, name := range policies.Names() {
			t.Run(filepath.Base(c.Source)+"/"+name, func(t *testing.T) {
				runTiresias60(t, jobs, c, name)
			})
		}
	}
}

func runTiresias60(t *testing.T, jobs []traces.Job, cluster traces.Cluster, name string) {
	cfg := DefaultConfig()
	cfg.Check = true
	r := runTrace(t, jobs, cluster, name, cfg)
	s := metrics.Summarize(r)
	if s.Jobs != 60 || s.Rejected != 0 {
		t.Errorf("%d jobs finished and %d rejected, want 60 finished", s.Jobs, s.Rejected)
	}
	if s.Utilization <= 0 || s.Utilization > 1 || s.UsefulUtilization > s.Utilization {
		t.Errorf("utilization %v (useful %v) out of range", s.Utilization, s.UsefulUtilization)
	}
	t.Logf("%s: jobs %d rejected %d mean wait %.0f s p99 JCT %.0f s makespan %.0f s preemptions %d lost %.2f GPU-h util %.3f events %d",
		name, s.Jobs, s.Rejected, s.Wait.Mean, s.JCT.P99, s.Makespan, s.Preemptions, s.GPUHoursLost, s.Utilization, r.Events)
}
