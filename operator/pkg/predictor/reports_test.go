package predictor

import (
	"testing"
	"time"
)

func TestRateReports(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var r RateReports
	type got struct {
		d     time.Duration
		bytes int64
		ok    bool
	}
	sample := func(id string, at time.Duration, rate float64) got {
		var stamp time.Time
		if at >= 0 {
			stamp = t0.Add(at)
		}
		d, b, ok := r.Sample(id, stamp, rate)
		return got{d, b, ok}
	}
	for i, c := range []struct {
		id   string
		at   time.Duration // -1: no time
		rate float64
		want got
	}{
		{"a", 0, 1e6, got{}}, // the first report sets the start
		{"a", 2 * time.Second, 1e6, got{2 * time.Second, 2e6, true}},
		{"a", 2 * time.Second, 1e6, got{}}, // not newer
		{"a", time.Second, 1e6, got{}},     // older
		{"a", 3 * time.Second, 0, got{}},   // no rate
		{"a", -1, 1e6, got{}},              // no time
		{"b", 4 * time.Second, 5e5, got{}}, // another job has its own start
		{"a", 5 * time.Second, 3e6, got{3 * time.Second, 9e6, true}},
		{"b", 8 * time.Second, 5e5, got{4 * time.Second, 2e6, true}},
	} {
		if g := sample(c.id, c.at, c.rate); g != c.want {
			t.Errorf("report %d (%s at %v, %.0f B/s): %+v, want %+v", i, c.id, c.at, c.rate, g, c.want)
		}
	}
	r.Retain(map[string]bool{"b": true})
	if g := sample("a", 9*time.Second, 1e6); g != (got{}) {
		t.Errorf("a's report after it was forgotten: %+v, want only a new start", g)
	}
	r.Forget("b")
	if g := sample("b", 10*time.Second, 1e6); g != (got{}) {
		t.Errorf("b's report after Forget: %+v, want only a new start", g)
	}
}
