package util

import (
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// Histogram is a Prometheus histogram summed over several scrapes (the replicas of a
// component): cumulative counts per upper bound.
type Histogram struct {
	Count   uint64
	Sum     float64
	buckets map[float64]uint64
}

// Add adds every series of a histogram family (a nil family adds nothing).
func (h *Histogram) Add(fam *dto.MetricFamily) {
	if fam == nil {
		return
	}
	if h.buckets == nil {
		h.buckets = map[float64]uint64{}
	}
	for _, m := range fam.GetMetric() {
		hist := m.GetHistogram()
		h.Count += hist.GetSampleCount()
		h.Sum += hist.GetSampleSum()
		for _, b := range hist.GetBucket() {
			h.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
}

// Quantile estimates the q-quantile as Prometheus's histogram_quantile does: linear
// interpolation inside the bucket that holds it (from 0 for the first bucket). It is NaN
// without samples, and the highest finite bound when the quantile lies in the +Inf bucket.
func (h *Histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	rank := q * float64(h.Count)
	lower, below := 0.0, uint64(0)
	for _, b := range bounds {
		c := h.buckets[b]
		if float64(c) >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == below {
				return b
			}
			return lower + (b-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = b, c
	}
	return lower
}
