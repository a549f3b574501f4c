package metrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDescribe(t *testing.T) {
	cases := map[string]struct {
		xs   []float64
		want Dist
	}{
		"empty": {},
		"one":   {xs: []float64{7}, want: Dist{N: 1, Mean: 7, P50: 7, P90: 7, P95: 7, P99: 7, Max: 7}},
		// ranks p/100 x 4: p50 -> 2 (30), p90 -> 3.6 (40+0.6x60), p95 -> 3.8, p99 -> 3.96.
		"five unsorted": {xs: []float64{100, 10, 40, 30, 20},
			want: Dist{N: 5, Mean: 40, P50: 30, P90: 76, P95: 88, P99: 97.6, Max: 100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Describe(tc.xs), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeries(t *testing.T) {
	// 10 GPUs; 4 allocated and 2 queued over [0, 90 s), 10 and 0 over [90 s, 120 s).
	s := NewSeries(10, 4, time.Minute)
	s.Record(0, 4, 2)
	s.Record(90*time.Second, 10, 0)
	got := s.Points(120 * time.Second)
	want := []Point{
		{T: 0, Utilization: 0.4, Queued: 2},
		{T: time.Minute, Utilization: 0.7, Queued: 1},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A long run stays within the bound, buckets merge and averages stay exact.
	long := NewSeries(10, 4, time.Minute)
	long.Record(0, 5, 1)
	pts := long.Points(100 * time.Minute)
	if len(pts) > 4 {
		t.Errorf("%d points, want at most 4", len(pts))
	}
	for _, p := range pts {
		if p.Utilization < 0.5-1e-9 || p.Utilization > 0.5+1e-9 || p.Queued < 1-1e-9 || p.Queued > 1+1e-9 {
			t.Errorf("point %+v, want utilization 0.5 and 1 queued", p)
		}
	}
}

func TestSummarize(t *testing.T) {
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	r := &Run{GPUs: 4, Jobs: []JobRecord{
		// a: preempted now once: 2 s redone, 30 s grace, 16 s resume; held 163 of 228.
		{ID: "a", GPUs: 4, Submit: 0, FirstStart: 0, Finish: sec(228), Service: sec(100), Held: sec(163),
			Preemptions: 1, RedoneWork: sec(2), SuspendWait: sec(30), ResumeOverhead: sec(16), StartOverhead: sec(15)},
		{ID: "b", GPUs: 4, Submit: sec(37), FirstStart: sec(67), Finish: sec(132), Service: sec(50), Held: sec(65), StartOverhead: sec(15)},
		{ID: "c", GPUs: 64, Rejected: true},
	}, PredictionErrors: []float64{0.1, -0.2, 0.3}}
	got := Summarize(r)
	want := Summary{
		Jobs: 2, Rejected: 1,
		Wait:              Dist{N: 2, Mean: 47.5, P50: 47.5, P90: 61.5, P95: 63.25, P99: 64.65, Max: 65},
		JCT:               Dist{N: 2, Mean: 161.5, P50: 161.5, P90: 214.7, P95: 221.35, P99: 226.67, Max: 228},
		Queueing:          Dist{N: 2, Mean: 15, P50: 15, P90: 27, P95: 28.5, P99: 29.7, Max: 30},
		Makespan:          228,
		Utilization:       (163 + 65) * 4 / (228 * 4.0),
		UsefulUtilization: 150 * 4 / (228 * 4.0),
		Preemptions:       1,
		GPUHoursLost:      48 * 4 / 3600.0,
		Prediction:        &Dist{N: 3, Mean: 0.2 / 3, P50: 0.1, P90: 0.26, P95: 0.28, P99: 0.296, Max: 0.3},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
