package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// TestReplayFlags: the flag errors of replay, all found before a cluster is touched.
func TestReplayFlags(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig.yaml")
	content := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"kubeconfig passed to --cluster": {args: []string{"--cluster", kubeconfig},
			wantErr: "--cluster " + kubeconfig + ": a kubeconfig; pass it as --kubeconfig " + kubeconfig},
		"--cluster local": {args: []string{"--cluster", "local"},
			wantErr: "--cluster local: the local testbed cluster is the default; --cluster is the cluster spec"},
		"--nodes and --cluster": {args: []string{"--nodes", "2x8", "--cluster", "2x8"},
			wantErr: "--nodes is the old name of --cluster: pass only --cluster"},
		"missing kubeconfig": {args: []string{"--kubeconfig", filepath.Join(dir, "none")},
			wantErr: "--kubeconfig " + filepath.Join(dir, "none") + ": no such file"},
		"local flag with --kubeconfig": {args: []string{"--kubeconfig", kubeconfig, "--keep-cluster"},
			wantErr: "--keep-cluster is for the local cluster; with --kubeconfig"},
		"unknown model": {args: []string{"--cluster", "2x8:A10O"},
			wantErr: `--cluster 2x8:A10O: unknown GPU model "A10O" (known: A10, A100,`},
		"unknown model, old flag name": {args: []string{"--nodes", "2x8:A10O"},
			wantErr: `--cluster 2x8:A10O: unknown GPU model "A10O"`},
		"negative start delay": {args: []string{"--start-delay", "-1s"},
			wantErr: "--start-delay -1s: want between 0 and 1h"},
		"suspend delay over an hour": {args: []string{"--suspend-delay", "2h"},
			wantErr: "--suspend-delay 2h0m0s: want between 0 and 1h"},
		"unknown kind": {args: []string{"--kind", "mpijob"},
			wantErr: `--kind: job kind "mpijob": want one of pytorchjob, rayjob, trainjob, mixed`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"replay", "--out", out}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused replay wrote %s: %v", out, err)
	}
}

// TestReplayHelp: the help says which flag takes the cluster spec and which an existing
// cluster, and hides the old name.
func TestReplayHelp(t *testing.T) {
	out, _, err := runCLI(t, "replay", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--kubeconfig string", "--cluster string", "as simulate's --cluster", "a kubeconfig passed to --cluster is refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(out, "--nodes string") {
		t.Errorf("help shows the deprecated --nodes")
	}
}

// TestControlPlaneDelay: the latency is the cluster's extra holding over the simulator's
// without its own delays, per job that ran once on both sides, in real time.
func TestControlPlaneDelay(t *testing.T) {
	sec := time.Second
	simRun := &metrics.Run{Jobs: []metrics.JobRecord{
		{ID: "a", Held: 140 * sec}, // 100 s of work and overheads, 40 s of simulated delays
		{ID: "b", Held: 240 * sec},
		{ID: "c", Held: 500 * sec, Preemptions: 1}, // preempted in the simulator: not measured
	}}
	clusterRun := &metrics.Run{Jobs: []metrics.JobRecord{
		{ID: "a", Held: 150 * sec}, // 50 s beyond the simulator's 100 s
		{ID: "b", Held: 270 * sec}, // 70 s beyond 200 s
		{ID: "c", Held: 600 * sec},
		{ID: "d", Held: 10 * sec}, // not in the simulator's run
	}}
	d, n := controlPlaneDelay(simRun, clusterRun, 40*sec, 10)
	if n != 2 || d != 6*sec {
		t.Errorf("controlPlaneDelay = %v over %d jobs, want 6s (60 s of trace at scale 10) over 2", d, n)
	}
	if _, n := controlPlaneDelay(simRun, &metrics.Run{}, 0, 10); n != 0 {
		t.Errorf("controlPlaneDelay measured %d jobs of an empty run", n)
	}
}

// TestMeanSuspendDelay: decision to GPUs free, per suspend (preemption or resize), in real time.
func TestMeanSuspendDelay(t *testing.T) {
	sec := time.Second
	r := &metrics.Run{Jobs: []metrics.JobRecord{
		{ID: "a", SuspendDelay: 60 * sec, Preemptions: 2}, // two suspends, 60 s of trace time together
		{ID: "b", SuspendDelay: 30 * sec, Resizes: 1},
		{ID: "c"},
	}}
	if d, n := meanSuspendDelay(r, 10); n != 3 || d != 3*sec {
		t.Errorf("meanSuspendDelay = %v over %d suspends, want 3s (30 s of trace at scale 10) over 3", d, n)
	}
	if _, n := meanSuspendDelay(&metrics.Run{Jobs: []metrics.JobRecord{{ID: "c"}}}, 10); n != 0 {
		t.Errorf("meanSuspendDelay counted %d suspends of a run without any", n)
	}
}
