package traces

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tracesDir returns the shared trace folder: $PICKYMAN_TRACES, else ../../shared/traces from
// this package. Without it a test skips, except under CI where it fails.
func tracesDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("PICKYMAN_TRACES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "traces")
	}
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("shared traces missing under CI: %v", err)
		}
		tb.Skipf("shared traces not found (%v); set PICKYMAN_TRACES", err)
	}
	return dir
}

func tracePath(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(tracesDir(tb), rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("trace file missing: %v", err)
	}
	return p
}

func TestRealTraces(t *testing.T) {
	tests := map[string]struct {
		path        string
		wantFormat  Format
		wantJobs    int
		wantSkipped int
		wantGPUs    map[int32]int
		wantFirst   string // ID of the first job in arrival order
	}{
		"tiresias 60 jobs": {
			path: "tiresias/60_job.csv", wantFormat: FormatTiresias, wantJobs: 60, wantFirst: "0",
		},
		"philly csv": {
			path: "philly-adaptdl/philly.csv", wantFormat: FormatPhillyCSV, wantJobs: 82247,
			wantGPUs: map[int32]int{1: 76627, 2: 1818, 4: 1870, 8: 1643, 12: 7, 16: 199, 24: 7, 32: 67, 64: 6, 128: 3},
		},
		"blox": {
			path: "blox/poisson_trace_10+0.5.csv", wantFormat: FormatBlox, wantJobs: 10, wantFirst: "1",
			wantGPUs: map[int32]int{1: 5, 2: 3, 4: 2},
		},
		// 8,152 pods: 1,088 CPU pods and 861 never-scheduled GPU pods are skipped, leaving
		// 6,203 of the 7,064 GPU pods.
		"openb pods": {
			path: "alibaba-openb/v2023_openb_pod_list_default.csv", wantFormat: FormatOpenB,
			wantJobs: 6203, wantSkipped: 1088 + 861,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := tracePath(t, tc.path)
			r, err := Open(path, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Format() != tc.wantFormat {
				t.Errorf("format = %s, want %s", r.Format(), tc.wantFormat)
			}
			gpus := map[int32]int{}
			n := 0
			var minSubmit time.Duration = -1
			for {
				j, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n++
				gpus[j.GPUs]++
				if minSubmit < 0 || j.Submit < minSubmit {
					minSubmit = j.Submit
				}
				checkInvariants(t, j)
			}
			if n != tc.wantJobs {
				t.Errorf("jobs = %d, want %d", n, tc.wantJobs)
			}
			if got := r.(SkipCounter).Skipped(); got != tc.wantSkipped {
				t.Errorf("skipped = %d, want %d", got, tc.wantSkipped)
			}
			if tc.wantGPUs != nil {
				if diff := cmpDiff(tc.wantGPUs, gpus); diff != "" {
					t.Errorf("GPU mix (-want +got):\n%s", diff)
				}
			}
			if r.Format() == FormatPhillyCSV && minSubmit != 0 {
				t.Errorf("earliest submit = %v, want 0", minSubmit)
			}
			all, err := ReadAll(path, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != tc.wantJobs {
				t.Errorf("ReadAll: %d jobs, want %d", len(all), tc.wantJobs)
			}
			for i := 1; i < len(all); i++ {
				if all[i].Submit < all[i-1].Submit {
					t.Fatalf("ReadAll not in arrival order at %d: %v < %v", i, all[i].Submit, all[i-1].Submit)
				}
			}
			if tc.wantFirst != "" && all[0].ID != tc.wantFirst {
				t.Errorf("first job = %q, want %q", all[0].ID, tc.wantFirst)
			}
		})
	}
}

func TestRealClusterFiles(t *testing.T) {
	tests := map[string]struct {
		path      string
		wantNodes int
		wantGPUs  int
	}{
		"tiresias n32g4":  {path: "tiresias/n32g4.csv", wantNodes: 32, wantGPUs: 128},
		"tiresias spec":   {path: "tiresias/cluster_spec.csv", wantNodes: 16, wantGPUs: 64},
		"openb node list": {path: "alibaba-openb/v2023_openb_node_list_gpu_node.csv", wantNodes: 1213, wantGPUs: 617*8 + 518*2 + 24 + 54*4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := ParseCluster(tracePath(t, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			if c.Nodes() != tc.wantNodes || c.GPUs() != tc.wantGPUs {
				t.Errorf("nodes, GPUs = %d, %d; want %d, %d (pools %v)", c.Nodes(), c.GPUs(), tc.wantNodes, tc.wantGPUs, c.Pools)
			}
		})
	}
}

// checkInvariants checks what every job a reader returns must satisfy.
func checkInvariants(t *testing.T, j Job) {
	t.Helper()
	if j.GPUs <= 0 || j.Workers <= 0 || j.GPUsPerWorker <= 0 || j.Workers*j.GPUsPerWorker != j.GPUs || j.GPUsPerWorker > MaxGPUsPerWorker {
		t.Fatalf("job %s line %d: GPUs %d = %d workers x %d", j.ID, j.Line, j.GPUs, j.Workers, j.GPUsPerWorker)
	}
	if j.Duration <= 0 || j.Epochs <= 0 || j.EpochTime <= 0 {
		t.Fatalf("job %s: duration %v epochs %d x %v", j.ID, j.Duration, j.Epochs, j.EpochTime)
	}
	if rem := j.Duration - time.Duration(j.Epochs)*j.EpochTime; rem < 0 || rem >= time.Duration(j.Epochs) {
		t.Fatalf("job %s: %d x %v != %v", j.ID, j.Epochs, j.EpochTime, j.Duration)
	}
	if j.Duration > time.Second && j.EpochTime < time.Second {
		t.Fatalf("job %s: epoch time %v < 1s", j.ID, j.EpochTime)
	}
	if j.Model == "" || j.DatasetBytes <= 0 || j.CheckpointBytes <= 0 || j.PriorityClass == "" {
		t.Fatalf("job %s: unsynthesized fields: %+v", j.ID, j)
	}
}
