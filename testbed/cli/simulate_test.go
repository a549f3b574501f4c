package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/report"
	"github.com/pickyman/pickyman/traces"
)

func TestSimulateCommand(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	root := NewRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"simulate", "--jobs", "150", "--cluster", "4x8", "--policies", "fifo,srtf", "--check", "--out", out})
	if err := root.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, stderr.String())
	}
	for _, f := range []string{"results.json", "jobs.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Cluster  string                    `json:"cluster"`
		Order    []string                  `json:"order"`
		Policies map[string]map[string]any `json:"policies"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Cluster != "4x8" || strings.Join(res.Order, ",") != "fifo,srtf" {
		t.Errorf("cluster %q, policies %v; want 4x8 and fifo,srtf", res.Cluster, res.Order)
	}
	for _, p := range res.Order {
		if jobs := res.Policies[p]["jobs"].(float64) + res.Policies[p]["rejected"].(float64); jobs != 150 {
			t.Errorf("%s: %v jobs finished or rejected, want 150", p, jobs)
		}
	}
	if !strings.Contains(stdout.String(), "mean wait (s)") || !strings.Contains(stdout.String(), "srtf") {
		t.Errorf("table missing from stdout:\n%s", stdout.String())
	}
}

// TestSimulateDefaults runs simulate without --trace or --policies on a small cluster: the
// generated trace offers --load on that cluster, the baselines and PickyMan run (no
// ablations), and the verdict comes before the table.
func TestSimulateDefaults(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	root := NewRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"simulate", "--jobs", "120", "--cluster", "2x8", "--load", "1.5", "--out", out})
	if err := root.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Trace string   `json:"trace"`
		Order []string `json:"order"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if want := "fifo,sjf,srtf,tiresias,kueue,pickyman"; strings.Join(res.Order, ",") != want {
		t.Errorf("policies %v, want %s", res.Order, want)
	}
	if !strings.Contains(res.Trace, "load 1.50 on 16 GPUs") {
		t.Errorf("trace %q, want one generated for load 1.50 on the cluster's 16 GPUs", res.Trace)
	}
	got := stdout.String()
	verdict, table := strings.Index(got, "pickyman against the best of fifo, sjf, srtf, tiresias, kueue"), strings.Index(got, "mean wait (s)")
	if verdict < 0 || table < 0 || verdict > table {
		t.Errorf("want the verdict, then the table:\n%s", got)
	}
	for _, fig := range []string{"mean wait", "p99 wait", "makespan", "GPU-hours lost"} {
		if !strings.Contains(got[:max(verdict, table)], "  "+fig+" ") {
			t.Errorf("verdict lacks %s:\n%s", fig, got)
		}
	}
}

// TestDemoContends runs simulate with every default, as make demo does, and checks that the
// default trace and cluster contend: FIFO waits at least three times as long as PickyMan on
// average, and the verdict names a best baseline for each figure.
func TestDemoContends(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	root := NewRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"simulate", "--out", out})
	if err := root.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	fifo, pm := res.Policies["fifo"], res.Policies[report.Subject]
	if pm.Jobs == 0 || fifo.MeanWait < 3*pm.MeanWait {
		t.Errorf("fifo mean wait %.0f s, pickyman %.0f s: want fifo at least 3 times pickyman's", fifo.MeanWait, pm.MeanWait)
	}
	if v := res.Verdict(); len(v) != 4 {
		t.Errorf("verdict %+v, want four figures", v)
	}
	if res.Cluster != defaultSimCluster {
		t.Errorf("cluster %q, want %q", res.Cluster, defaultSimCluster)
	}
	if want := "load 1.00 on 256 GPUs, so 2.00 on this cluster's 128"; !strings.Contains(res.Trace, want) {
		t.Errorf("trace %q, want it to say %q", res.Trace, want)
	}
}

func TestSimulatePoliciesAll(t *testing.T) {
	out := t.TempDir()
	var sink bytes.Buffer
	root := NewRootCommand()
	root.SetOut(&sink)
	root.SetErr(&sink)
	root.SetArgs([]string{"simulate", "--jobs", "20", "--cluster", "2x8", "--policies", "all", "--out", out})
	if err := root.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, sink.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Order []string `json:"order"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(res.Order, ","), strings.Join(policies.Names(), ","); got != want {
		t.Errorf("--policies all ran %s, want every registered policy %s", got, want)
	}
}

func TestSimulateFlagsErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown policy": {[]string{"--jobs", "5", "--policies", "nope"}, `unknown policy "nope"`},
		"bad window":     {[]string{"--window", "10"}, "want FROM:TO"},
		"empty window":   {[]string{"--window", "0:0"}, "no jobs"},
		"bad cluster":    {[]string{"--cluster", "x"}, "cluster"},
		"negative load":  {[]string{"--jobs", "5", "--load", "-1"}, "want a positive offered load"},
		"unknown model":  {[]string{"--jobs", "5", "--cluster", "4x8:V100,2x8:V10O"}, `pool 2x8:V10O: unknown GPU model "V10O" (known: A10, A100`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := NewRootCommand()
			var sink bytes.Buffer
			root.SetOut(&sink)
			root.SetErr(&sink)
			root.SetArgs(append([]string{"simulate", "--out", t.TempDir()}, tc.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFidelity(t *testing.T) {
	s := metrics.Summary{JCT: metrics.Dist{Mean: 1000}, Wait: metrics.Dist{Mean: 0}, Makespan: 2000}
	c := metrics.Summary{JCT: metrics.Dist{Mean: 1100}, Wait: metrics.Dist{Mean: 4}, Makespan: 1900}
	got := Fidelity(s, c, 10, time.Minute)
	for _, want := range []string{"| mean JCT (s) | 1000 | 1100 | +10.0% |", "| mean wait (s) | 0 | 4 | +4 |", "| makespan (s) | 2000 | 1900 | -5.0% |", "time scale 10"} {
		if !strings.Contains(got, want) {
			t.Errorf("fidelity table lacks %q:\n%s", want, got)
		}
	}
}

// TestCheckPoolModels: a pool's model must be a known one or one that a job asks for.
func TestCheckPoolModels(t *testing.T) {
	jobs := []traces.Job{{ID: "a", GPUModel: "V100M32"}, {ID: "b"}}
	pools := func(models ...string) traces.Cluster {
		var c traces.Cluster
		for _, m := range models {
			c.Pools = append(c.Pools, traces.NodePool{Count: 2, GPUs: 8, GPUModel: m})
		}
		return c
	}
	for _, ok := range []traces.Cluster{pools(""), pools("V100"), pools("a100"), pools("V100M32", "T4")} {
		if err := checkPoolModels(ok, jobs); err != nil {
			t.Errorf("%v: %v, want accepted", ok, err)
		}
	}
	err := checkPoolModels(pools("V100", "MI300"), jobs)
	for _, want := range []string{`unknown GPU model "MI300"`, "known: A10, A100", "ask for: V100M32"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
}
