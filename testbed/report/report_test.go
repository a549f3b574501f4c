package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
	"github.com/pickyman/pickyman/traces"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// handRuns simulates three small jobs on one 4-GPU node under a FIFO and a preempting
// policy with round-number physics and no noise.
func handRuns(t *testing.T) (Meta, []*metrics.Run) {
	t.Helper()
	jobs := []traces.Job{
		simtest.MakeTraceJob("a").Gang(1, 4).Duration(100 * time.Second).Epochs(10).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("b").Gang(2, 2).Duration(50 * time.Second).Epochs(5).Checkpoint(2e9).Priority(10).Submit(37 * time.Second).Obj(),
		simtest.MakeTraceJob("c").Gang(1, 1).Duration(20 * time.Second).Submit(40 * time.Second).Obj(),
	}
	jobs[0].Synthesized = traces.FieldSet(traces.FieldModel | traces.FieldEpochs)
	cfg := sim.DefaultConfig()
	cfg.Check = true
	cfg.Physics = sim.Physics{ContainerStart: 10 * time.Second, WarmUp: 5 * time.Second, Grace: 30 * time.Second,
		WriteBandwidth: 1e9, ReadBandwidth: 2e9, CheckpointPeriod: 1}
	var runs []*metrics.Run
	for _, p := range []sched.Policy{simtest.NewFIFO(), simtest.NewPriority(sched.SuspendNow), simtest.NewPriority(sched.SuspendBoundary)} {
		e, err := sim.New(simtest.Cluster(1, 4), jobs, p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r.Wall = 0 // wall-clock time is not reproducible
		runs = append(runs, r)
	}
	return Meta{Trace: "hand", Cluster: "1x4", GPUs: 4, Seed: 1, SynthesizedFields: Synthesized(jobs)}, runs
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got; go test -update rewrites it):\n%s", name, diff)
	}
}

func TestGolden(t *testing.T) {
	meta, runs := handRuns(t)
	res := Build(meta, runs)
	js, err := res.JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "results.json", js)
	golden(t, "table.txt", []byte(res.Table()))
	var jobs bytes.Buffer
	if err := WriteJobs(&jobs, runs); err != nil {
		t.Fatal(err)
	}
	golden(t, "jobs.csv", jobs.Bytes())
}

func TestWrite(t *testing.T) {
	meta, runs := handRuns(t)
	dir := t.TempDir()
	if _, err := Write(dir, meta, runs); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	pols, _ := decoded["policies"].(map[string]any)
	fifo, _ := pols["test-fifo"].(map[string]any)
	for _, k := range []string{"jobs", "mean_wait_s", "p50_wait_s", "p95_wait_s", "p99_wait_s", "mean_jct_s", "p99_jct_s",
		"makespan_s", "preemptions", "gpu_hours_lost", "utilization"} {
		if _, ok := fifo[k]; !ok {
			t.Errorf("results.json: policy test-fifo lacks %q", k)
		}
	}
	for _, k := range []string{"trace", "cluster", "seed", "synthesized_fields"} {
		if _, ok := decoded[k]; !ok {
			t.Errorf("results.json lacks %q", k)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<svg class="plot`); n != 6 {
		t.Errorf("report.html holds %d SVG plots, want 6", n)
	}
	if strings.Contains(string(page), "http://") || strings.Contains(string(page), "https://") {
		t.Error("report.html refers to an external resource")
	}
}

// TestFiguresDegenerate renders runs where nothing waits and nothing is preempted (a log
// axis with every value at its floor, bars all zero).
func TestFiguresDegenerate(t *testing.T) {
	_, runs := handRuns(t)
	for i := range runs {
		for j := range runs[i].Jobs {
			r := &runs[i].Jobs[j]
			r.FirstStart, r.Held, r.Finish = r.Submit, r.Service, r.Submit+r.Service
			r.Preemptions, r.RedoneWork, r.SuspendWait, r.ResumeOverhead, r.StartOverhead = 0, 0, 0, 0, 0
		}
	}
	res := Build(Meta{}, runs)
	figs, err := Figures(res, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 6 {
		t.Errorf("%d figures, want 6", len(figs))
	}
	for _, f := range figs {
		if strings.Contains(string(f.SVG), "NaN") || strings.Contains(string(f.SVG), "Inf") {
			t.Errorf("figure %s draws a NaN or infinite coordinate", f.ID)
		}
	}
}
