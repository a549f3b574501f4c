package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// TestReplaySchedulerFlags: what --scheduler refuses, before a cluster is touched.
func TestReplaySchedulerFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"unknown scheduler": {args: []string{"--scheduler", "volcano"},
			wantErr: `--scheduler "volcano": want one of pickyman, kueue`},
		"kueue with RayJobs": {args: []string{"--scheduler", "kueue", "--kind", "rayjob"},
			wantErr: "--scheduler kueue: the replay's Kueue admits PyTorchJobs only; --kind rayjob"},
		"kueue with elastic jobs": {args: []string{"--scheduler", "kueue", "--elastic", "0.5"},
			wantErr: "--scheduler kueue: elastic jobs are resized by PickyMan"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"replay", "--out", out}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestKueueFidelity(t *testing.T) {
	simK := metrics.Summary{Wait: metrics.Dist{Mean: 100, P99: 400}, JCT: metrics.Dist{Mean: 1000, P99: 3000},
		Makespan: 5000, Preemptions: 0, GPUHoursLost: 0}
	real := metrics.Summary{Wait: metrics.Dist{Mean: 110, P99: 380}, JCT: metrics.Dist{Mean: 1000, P99: 3300},
		Makespan: 5100, Preemptions: 3, GPUHoursLost: 1.25}
	simP := metrics.Summary{Wait: metrics.Dist{Mean: 50, P99: 200}, JCT: metrics.Dist{Mean: 900, P99: 2900},
		Makespan: 4900, Preemptions: 2, GPUHoursLost: 0.5}
	got := KueueFidelity(simK, real, simP, 100, 90*time.Second)
	for _, want := range []string{
		"| metric | kueue (simulator) | Kueue v0.17.0 (cluster) | difference | pickyman (simulator) |",
		"| mean wait (s) | 100 | 110 | +10.0% | 50 |",
		"| p99 wait (s) | 400 | 380 | -5.0% | 200 |",
		"| mean JCT (s) | 1000 | 1000 | +0.0% | 900 |",
		"| p99 JCT (s) | 3000 | 3300 | +10.0% | 2900 |",
		"| preemptions | 0 | 3 | +3 | 2 |",
		"| GPU-hours lost | 0.0 | 1.2 | +1.2 | 0.5 |",
		"time scale 100; cluster replay wall time 1m30s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("fidelity lacks %q:\n%s", want, got)
		}
	}
}
