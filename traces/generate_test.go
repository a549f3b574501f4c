package traces

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestGenerateGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, Generate(GenerateConfig{Jobs: 12, Seed: 7})); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "generate_12_seed7.golden.csv")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGenerateGolden -update)", err)
	}
	if diff := cmpDiff(string(want), b.String()); diff != "" {
		t.Errorf("generated trace differs from %s (-want +got):\n%s", golden, diff)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := GenerateConfig{Jobs: 300, Seed: 5}
	a, b := Generate(cfg), Generate(cfg)
	if diff := cmpDiff(a, b); diff != "" {
		t.Fatalf("same config, different traces:\n%s", diff)
	}
	cfg.Seed = 6
	if cmpDiff(a, Generate(cfg)) == "" {
		t.Error("seeds 5 and 6 gave the same trace")
	}
}

func TestGenerateDefault(t *testing.T) {
	cfg := DefaultGenerateConfig()
	jobs := Generate(cfg)
	if len(jobs) != 2000 {
		t.Fatalf("%d jobs, want 2000", len(jobs))
	}
	queues, classes := map[string]int{}, map[string]int{}
	for i, j := range jobs {
		checkInvariants(t, j)
		if i > 0 && j.Submit < jobs[i-1].Submit {
			t.Fatalf("job %d arrives before job %d", i, i-1)
		}
		queues[j.Queue]++
		classes[j.PriorityClass]++
	}
	// The window is derived from the jobs' work, so the offered load over the first to the
	// last arrival is the configured 1.0, to within the last arrival's distance from the end.
	if load := OfferedLoad(jobs, cfg.ClusterGPUs, 0); load < 0.95 || load > 1.1 {
		t.Errorf("offered load = %.3f, want about %.1f", load, cfg.Load)
	}
	if len(queues) != 4 || len(classes) != 2 {
		t.Errorf("queues %v, classes %v; want 4 queues and 2 classes", queues, classes)
	}
}

func TestGenerateMatchesPhillyMix(t *testing.T) {
	jobs := Generate(GenerateConfig{Jobs: 20000, Seed: 11, Span: 1e15})
	one, short := 0, 0
	for _, j := range jobs {
		if j.GPUs == 1 {
			one++
			if j.Duration <= singleGPUDurations.p50 {
				short++
			}
		}
	}
	if share := float64(one) / float64(len(jobs)); share < 0.92 || share > 0.94 {
		t.Errorf("1-GPU share = %.3f, want 0.932 (philly.csv)", share)
	}
	if frac := float64(short) / float64(one); frac < 0.48 || frac > 0.52 {
		t.Errorf("1-GPU jobs at or under the philly.csv median = %.3f, want 0.5", frac)
	}
}

func TestPickymanRoundTrip(t *testing.T) {
	jobs := Generate(GenerateConfig{Jobs: 50, Seed: 3})
	jobs[0].Duration += 123 // nanoseconds survive
	jobs[1].User, jobs[1].Status, jobs[1].GPUModel = "alice, \"the\" user", "Pass", "V100"
	var b bytes.Buffer
	if err := WriteCSV(&b, jobs); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(path, Options{Seed: 99})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(jobs, got); diff != "" {
		t.Errorf("round trip (-written +read):\n%s", diff)
	}

	// A read trace round-trips too (Line is the position in the file read).
	blox := "job_id,num_gpus,submit_time,duration,model,batch_size\n1,1,12,9447,resnet50,64\n6,12,143,7527,GPT2-Medium,32\n"
	orig, _, err := readRaw("blox.csv", blox, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range orig {
		synthesize(&orig[i], 1)
	}
	b.Reset()
	if err := WriteCSV(&b, orig); err != nil {
		t.Fatal(err)
	}
	back, _, err := readRaw("p.csv", b.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(orig, back, cmpopts.IgnoreFields(Job{}, "Line")); diff != "" {
		t.Errorf("read-trace round trip (-written +read):\n%s", diff)
	}
}
