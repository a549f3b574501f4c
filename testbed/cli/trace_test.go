package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/traces"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := NewRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestTraceGenerateThenInspect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.csv")
	_, stderr, err := runCLI(t, "trace", "generate", "--jobs", "40", "--seed", "3", "--out", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "generated 40 jobs (seed 3)") {
		t.Errorf("stderr = %q", stderr)
	}
	jobs, err := traces.ReadAll(path, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(traces.Generate(traces.GenerateConfig{Jobs: 40, Seed: 3}), jobs); diff != "" {
		t.Errorf("file differs from Generate (-want +got):\n%s", diff)
	}

	out, _, err := runCLI(t, "trace", "inspect", path, "--cluster", "4x8")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format            pickyman", "jobs              40 (skipped 0)", "offered load", "GPU demand        1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
}

func TestTraceInspectErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("job_id,num_gpus,submit_time,duration,model,batch_size\n1,x,0,5,m,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, "trace", "inspect", bad)
	if err == nil || err.Error() != `bad.csv:2: column "num_gpus": invalid integer "x"` {
		t.Errorf("error = %v", err)
	}
	if _, _, err := runCLI(t, "trace", "generate", "--jobs", "0"); err == nil {
		t.Error("--jobs 0 accepted")
	}
}

func TestTraceInspectJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.csv")
	if _, _, err := runCLI(t, "trace", "generate", "--jobs", "40", "--seed", "3", "--out", path); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "trace", "inspect", path, "--cluster", "4x8", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got traceSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Format != "pickyman" || got.Jobs != 40 || got.ClusterGPUs != 32 || got.OfferedLoad == nil || *got.OfferedLoad <= 0 {
		t.Errorf("summary = %+v", got)
	}
	demand := 0
	for _, n := range got.GPUDemand {
		demand += n
	}
	if demand != 40 || got.DurationSeconds["p50"] <= 0 || got.DurationSeconds["max"] < got.DurationSeconds["p99"] || got.GPUHours <= 0 {
		t.Errorf("GPU demand counts %d jobs, durations %v, GPU-hours %v", demand, got.DurationSeconds, got.GPUHours)
	}
	if got.Synthesized["model"] != 40 {
		t.Errorf("synthesized = %v, want model:40", got.Synthesized)
	}
}

// TestMissingClusterFile: a --cluster that names a file that is not there says so and names
// it, in every command that takes a cluster.
func TestMissingClusterFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "clusters", "a.csv")
	want := "cluster file " + missing + ": no such file"
	for _, args := range [][]string{
		{"trace", "inspect", "trace.csv", "--cluster", missing},
		{"simulate", "--cluster", missing, "--out", t.TempDir()},
		{"replay", "--cluster", missing, "--out", t.TempDir()},
	} {
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error = %v, want it to contain %q", args[0], err, want)
		}
	}
}
