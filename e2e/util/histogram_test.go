package util

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func family(t *testing.T, observations ...float64) *dto.MetricFamily {
	t.Helper()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Buckets: []float64{0.001, 0.01, 0.1, 1}})
	for _, o := range observations {
		h.Observe(o)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	fams, err := reg.Gather()
	if err != nil || len(fams) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(fams))
	}
	return fams[0]
}

func TestHistogramQuantile(t *testing.T) {
	var h Histogram
	if !math.IsNaN(h.Quantile(0.99)) {
		t.Error("a histogram without samples has a quantile")
	}
	// Two replicas: the leader's 100 cycles, 90 under 1 ms and 10 in (10 ms, 100 ms]; the
	// other replica's none.
	var obs []float64
	for range 90 {
		obs = append(obs, 0.0005)
	}
	for range 10 {
		obs = append(obs, 0.05)
	}
	h.Add(family(t, obs...))
	h.Add(family(t))
	if h.Count != 100 {
		t.Fatalf("count %d, want 100", h.Count)
	}
	// Rank 99 is the 9th of the 10 in (0.01, 0.1]: 0.01 + 0.09 * 9/10.
	if got, want := h.Quantile(0.99), 0.091; math.Abs(got-want) > 1e-9 {
		t.Errorf("p99 = %v, want %v", got, want)
	}
	if got, want := h.Quantile(0.5), 0.001*50/90; math.Abs(got-want) > 1e-9 {
		t.Errorf("p50 = %v, want %v", got, want)
	}
	h.Add(family(t, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5))
	if got := h.Quantile(0.99); got != 1 {
		t.Errorf("p99 in the +Inf bucket = %v, want the highest bound 1", got)
	}
}
