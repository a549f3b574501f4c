package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/traces"
)

// TestSimulateAbsurdTrace: a Philly CSV whose timestamps lie in the years 0001 and 9999
// made the simulator's clock overflow and its time series index out of range; now the
// command refuses the trace, naming the file, the line and the column.
func TestSimulateAbsurdTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "absurd.csv")
	content := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-03 10:00:00,600,1,600,c\n0001-01-01 00:00:00,600,1,600,c\n9999-12-31 00:00:00,600,1,600,c\n"
	if err := os.WriteFile(trace, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	o := simulateOptions{trace: trace, cluster: "2x8", policies: "fifo", seed: 1, out: filepath.Join(dir, "out"), grow: 1}
	err := runSimulate(context.Background(), o, io.Discard, io.Discard)
	want := `absurd.csv:3: column "timestamp": timestamp out of range "0001-01-01 00:00:00"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("simulate: %v, want an error containing %q", err, want)
	}
}

// FuzzSimulate feeds an arbitrary trace and cluster spec to `pickyman simulate` (every trace
// format, detected; two policies, invariants checked at every cycle): it must finish or
// return an error, never panic. Inputs are kept small so that one run is short.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-03 10:00:00,600,1,600,c\n2017-10-03 10:05:00,60,16,960,c\n"), "2x8")
	f.Add([]byte("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,4,0,606,vgg19,164,30\n1,2,30,100,resnet50,3600,0\n"), "1x4:V100,1x8:A100")
	f.Add([]byte("timestamp,duration,num_gpus,gpu_time,cluster\n9999-12-31 00:00:00,600,1,600,c\n1900-01-01 00:00:00,600,1,600,c\n"), "4x8")
	f.Add([]byte("[{\"jobid\": \"a\", \"submitted_time\": \"2017-10-03 10:00:00\", \"attempts\": [{\"start_time\": \"2017-10-03 10:00:00\", \"end_time\": \"2017-10-03 11:00:00\", \"detail\": [{\"ip\": \"m1\", \"gpus\": [\"gpu0\"]}]}]}]"), "1x1")
	f.Fuzz(func(t *testing.T, data []byte, cluster string) {
		if len(data) > 4096 || len(cluster) > 64 {
			return
		}
		c, err := traces.ParseCluster(cluster)
		if err != nil {
			return
		}
		nodes := 0
		for _, p := range c.Pools {
			nodes += p.Count
		}
		if nodes > 64 {
			return // a large cluster is slow, not interesting
		}
		dir := t.TempDir()
		trace := filepath.Join(dir, "trace")
		if err := os.WriteFile(trace, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o := simulateOptions{trace: trace, cluster: cluster, policies: "fifo,pickyman", seed: 1, check: true, jobs: 40,
			out: filepath.Join(dir, "out"), grow: 1}
		_ = runSimulate(ctx, o, io.Discard, io.Discard)
	})
}

// FuzzTraceInspect feeds an arbitrary trace, cluster spec, format and output format to
// `pickyman trace inspect`: it must print or return an error, never panic, and what it prints
// with -o json must be JSON.
func FuzzTraceInspect(f *testing.F) {
	f.Add([]byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-03 10:00:00,600,1,600,c\n"), "2x8", "", "json")
	f.Add([]byte("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,4,0,606,vgg19,164,30\n"), "1x4:V100,1x8:A100", "muri", "text")
	f.Add([]byte("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-03 10:00:00,600,1,600,c\n2017-10-03 10:00:00,60,2,120,c\n"), "missing.csv", "philly-csv", "json")
	f.Add([]byte(""), "", "nope", "yaml")
	f.Fuzz(func(t *testing.T, data []byte, cluster, format, output string) {
		if len(data) > 4096 || len(cluster) > 64 {
			return
		}
		trace := filepath.Join(t.TempDir(), "trace")
		if err := os.WriteFile(trace, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"trace", "inspect", trace, "--format", format, "-o", output}
		if cluster != "" {
			args = append(args, "--cluster", cluster)
		}
		out, _, err := runCLI(t, args...)
		if err == nil && output == "json" && !json.Valid([]byte(out)) {
			t.Errorf("inspect -o json printed no JSON:\n%s", out)
		}
	})
}

// FuzzComplete asks cobra's completion command for arbitrary words: it completes or
// returns an error and never runs a command, so any words are safe to try.
func FuzzComplete(f *testing.F) {
	f.Add("simulate", "--policies", "fifo,pi")
	f.Add("replay", "--kind", "")
	f.Add("trace", "inspect", "-o")
	f.Add("cluster", "up", "--gpu-model=A")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		if _, _, err := runCLI(t, "__complete", a, b, c); err != nil {
			t.Logf("__complete %q %q %q: %v", a, b, c, err)
		}
	})
}
