package traces

import (
	"testing"
	"time"
)

func TestSplitWorkers(t *testing.T) {
	tests := map[int32][2]int32{
		1: {1, 1}, 4: {1, 4}, 8: {1, 8}, 12: {2, 6}, 16: {2, 8}, 24: {3, 8}, 11: {11, 1}, 128: {16, 8}, 0: {0, 0},
	}
	for gpus, want := range tests {
		w, per := SplitWorkers(gpus)
		if [2]int32{w, per} != want {
			t.Errorf("SplitWorkers(%d) = %d x %d, want %d x %d", gpus, w, per, want[0], want[1])
		}
	}
}

func TestLookupModel(t *testing.T) {
	tests := map[string]struct {
		name       string
		wantParams int64
		wantKnown  bool
	}{
		"exact":                        {"resnet50", 25_600_000, true},
		"case and dash":                {"GPT2-Medium", 355_000_000, true},
		"blox spelling":                {"Bert-Large", 340_000_000, true},
		"alias":                        {"inception_v3", 27_200_000, true},
		"unknown is sized as resnet50": {"mystery-net", 25_600_000, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mi, ok := LookupModel(tc.name)
			if mi.Params != tc.wantParams || ok != tc.wantKnown {
				t.Errorf("LookupModel(%q) = %d params, %v; want %d, %v", tc.name, mi.Params, ok, tc.wantParams, tc.wantKnown)
			}
			if mi.CheckpointBytes() != tc.wantParams*12 {
				t.Errorf("checkpoint = %d, want %d", mi.CheckpointBytes(), tc.wantParams*12)
			}
		})
	}
}

func TestSplitEpochs(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, time.Second, 1500 * time.Millisecond, 59 * time.Second, time.Hour, 1234567891 * time.Millisecond, 53 * 24 * time.Hour} {
		for _, u := range []float64{0, 0.3, 0.999} {
			n, et := splitEpochs(d, u)
			if n < 1 {
				t.Fatalf("splitEpochs(%v, %v): %d epochs", d, u, n)
			}
			if rem := d - time.Duration(n)*et; rem < 0 || rem >= time.Duration(n) {
				t.Errorf("splitEpochs(%v, %v) = %d x %v, off by %v", d, u, n, et, rem)
			}
			if d >= time.Second && et < time.Second {
				t.Errorf("splitEpochs(%v, %v): epoch %v < 1s", d, u, et)
			}
		}
	}
	if n, et := splitEpochs(10*time.Hour, 0); n != 600 || et != time.Minute {
		t.Errorf("10h at the shortest target = %d x %v, want 600 x 1m", n, et)
	}
}

func TestSynthesisIsDeterministicAndOrderFree(t *testing.T) {
	base := []Job{
		job("a").gpus(1).dur(time.Hour).obj(),
		job("b").gpus(16).dur(3 * time.Hour).model("vgg16").obj(),
		job("c").gpus(2).dur(90*time.Second).prio(1, "LS").obj(),
	}
	synth := func(order []int, seed int64) map[string]Job {
		out := map[string]Job{}
		for _, i := range order {
			j := base[i]
			synthesize(&j, seed)
			out[j.ID] = j
		}
		return out
	}
	first := synth([]int{0, 1, 2}, 42)
	if diff := cmpDiff(first, synth([]int{2, 0, 1}, 42)); diff != "" {
		t.Errorf("order changes synthesis (-first +reversed):\n%s", diff)
	}
	other := synth([]int{0, 1, 2}, 43)
	same := 0
	for id := range first {
		if first[id].Model == other[id].Model && first[id].Epochs == other[id].Epochs {
			same++
		}
	}
	if same == len(first) {
		t.Error("seed 43 synthesized the same fields as seed 42")
	}

	b := first["b"]
	wantB := FieldSet(FieldEpochs) | FieldSet(FieldEpochTime) | FieldSet(FieldDatasetBytes) |
		FieldSet(FieldCheckpointBytes) | FieldSet(FieldWorkers) | FieldSet(FieldPriority) | FieldSet(FieldGPUModel)
	if b.Synthesized != wantB || b.Model != "vgg16" || b.Workers != 2 || b.GPUsPerWorker != 8 ||
		b.CheckpointBytes != 138_400_000*12 || b.DatasetBytes != imagenetBytes {
		t.Errorf("job b = %+v", b)
	}
	if c := first["c"]; c.Synthesized.Has(FieldPriority) || c.PriorityClass != "LS" {
		t.Errorf("job c: trace priority overwritten: %+v", c)
	}
}

func TestSynthesizedPriorityShare(t *testing.T) {
	high := 0
	const n = 20000
	for i := range n {
		j := job(string(rune('a'+i%26)) + itoa32(int32(i))).gpus(1).dur(time.Hour).obj()
		synthesize(&j, 7)
		if j.Priority == PriorityHigh {
			high++
		}
	}
	if share := float64(high) / n; share < 0.18 || share > 0.22 {
		t.Errorf("high share = %.3f, want about %.2f", share, highPriorityShare)
	}
}

func TestFieldSetString(t *testing.T) {
	s := FieldSet(FieldModel) | FieldSet(FieldWorkers) | FieldSet(FieldGPUModel)
	if got := s.String(); got != "model|workers|gpu_model" {
		t.Errorf("String = %q", got)
	}
	back, err := ParseFieldSet(s.String())
	if err != nil || back != s {
		t.Errorf("ParseFieldSet = %v, %v; want %v", back, err, s)
	}
	if _, err := ParseFieldSet("model|bogus"); err == nil {
		t.Error("ParseFieldSet accepted an unknown field")
	}
}
