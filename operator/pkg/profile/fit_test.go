package profile

import (
	"math"
	"testing"
	"time"
)

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func samplesFor(a, b float64, gpus ...int32) []Sample {
	var out []Sample
	for i, g := range gpus {
		out = append(out, Sample{JobID: string(rune('a' + i)), GPUs: g, EpochTime: secs(a + b/float64(g))})
	}
	return out
}

func TestFitSamples(t *testing.T) {
	cfg := DefaultFitConfig()
	tests := map[string]struct {
		samples     []Sample
		wantA       float64
		wantB       float64
		wantTrusted bool
	}{
		"exact recovery, four allocations": {
			samples: samplesFor(12, 480, 1, 2, 4, 8), wantA: 12, wantB: 480, wantTrusted: true,
		},
		"exact recovery, repeated allocations": {
			samples: samplesFor(3.5, 100, 1, 1, 2, 8, 8, 16), wantA: 3.5, wantB: 100, wantTrusted: true,
		},
		"three samples are not trusted": {
			samples: samplesFor(12, 480, 1, 2, 4), wantA: 12, wantB: 480, wantTrusted: false,
		},
		"single allocation assumes linear scaling": {
			samples: samplesFor(0, 800, 4, 4, 4, 4), wantA: 0, wantB: 800, wantTrusted: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := FitSamples(tc.samples, cfg)
			if math.Abs(f.A-tc.wantA) > 1e-6 || math.Abs(f.B-tc.wantB) > 1e-6 {
				t.Errorf("fit = %v + %v/G, want %v + %v/G", f.A, f.B, tc.wantA, tc.wantB)
			}
			if f.Trusted != tc.wantTrusted {
				t.Errorf("Trusted = %v, want %v (residual %v)", f.Trusted, tc.wantTrusted, f.RelResidual)
			}
			if f.RelResidual > 1e-9 {
				t.Errorf("RelResidual = %v, want 0 for noiseless samples", f.RelResidual)
			}
		})
	}
}

func TestFitResidualBound(t *testing.T) {
	// Epoch times that do not follow a + b/G at all: 100 s, 10 s, 100 s, 10 s on 1, 2, 4, 8 GPUs.
	s := []Sample{
		{JobID: "a", GPUs: 1, EpochTime: secs(100)},
		{JobID: "b", GPUs: 2, EpochTime: secs(10)},
		{JobID: "c", GPUs: 4, EpochTime: secs(100)},
		{JobID: "d", GPUs: 8, EpochTime: secs(10)},
	}
	f := FitSamples(s, DefaultFitConfig())
	if f.Trusted {
		t.Fatalf("fit over inconsistent samples is trusted (residual %v)", f.RelResidual)
	}
	if f.RelResidual <= 0.10 {
		t.Errorf("RelResidual = %v, want > 0.10", f.RelResidual)
	}
}

func TestFitAt(t *testing.T) {
	f := FitSamples(samplesFor(10, 90, 1, 3, 9, 9), DefaultFitConfig())
	if got, want := f.At(3), secs(40); absDur(got-want) > time.Microsecond {
		t.Errorf("At(3) = %v, want %v", got, want)
	}
	if got := (Fit{}).At(4); got != 0 {
		t.Errorf("empty fit At(4) = %v, want 0", got)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestProfileAdd(t *testing.T) {
	var p Profile
	p.Add(Sample{JobID: "a", GPUs: 1, EpochTime: time.Second}, 2)
	p.Add(Sample{JobID: "b", GPUs: 1, EpochTime: time.Second}, 2)
	p.Add(Sample{JobID: "a", GPUs: 2, EpochTime: time.Second}, 2)
	if len(p.Samples) != 2 || p.Samples[0].GPUs != 2 {
		t.Fatalf("replacing a job's sample: got %+v", p.Samples)
	}
	p.Add(Sample{JobID: "c", GPUs: 1, EpochTime: time.Second}, 2)
	if len(p.Samples) != 2 || p.Samples[0].JobID != "b" || p.Samples[1].JobID != "c" {
		t.Fatalf("bounded samples: got %+v, want b, c", p.Samples)
	}
}
