package metrics

import "time"

// Point is one sample of a run's time series: time-weighted averages over a bucket.
type Point struct {
	// T is the bucket's start as an offset from the trace's start.
	T time.Duration `json:"t"`
	// Utilization is the allocated fraction of the cluster's GPUs.
	Utilization float64 `json:"utilization"`
	// Queued is the number of jobs waiting for GPUs.
	Queued float64 `json:"queued"`
}

// Series records a step function of allocated GPUs and queue length over time into at most
// MaxPoints buckets of equal width. The width starts at an initial value and doubles
// (merging neighbouring buckets) whenever the run outgrows the buckets, so memory stays
// bounded for any trace length and every bucket holds a time-weighted average.
type Series struct {
	maxPoints int
	gpus      float64
	width     time.Duration
	// sums of value x time per bucket
	util  []float64
	queue []float64
	// current step
	last      time.Duration
	lastUtil  float64
	lastQueue float64
	started   bool
}

// NewSeries returns a series for a cluster of gpus GPUs with at most maxPoints buckets
// (at least 2) of initial width width.
func NewSeries(gpus int32, maxPoints int, width time.Duration) *Series {
	if maxPoints < 2 {
		maxPoints = 2
	}
	if width <= 0 {
		width = time.Minute
	}
	return &Series{maxPoints: maxPoints, gpus: float64(gpus), width: width}
}

// Record says that from time t on, allocated GPUs are allocated and queued jobs wait.
// Times must not decrease.
func (s *Series) Record(t time.Duration, allocated int32, queued int) {
	if s.started {
		s.accumulate(s.last, t)
	}
	s.started = true
	s.last = t
	s.lastUtil = float64(allocated)
	s.lastQueue = float64(queued)
}

// accumulate adds the current step over [from, to) to the buckets.
func (s *Series) accumulate(from, to time.Duration) {
	for from < to {
		b := int(from / s.width)
		for b >= s.maxPoints {
			s.merge()
			b = int(from / s.width)
		}
		for len(s.util) <= b {
			s.util = append(s.util, 0)
			s.queue = append(s.queue, 0)
		}
		end := time.Duration(b+1) * s.width
		if end > to {
			end = to
		}
		d := (end - from).Seconds()
		s.util[b] += s.lastUtil * d
		s.queue[b] += s.lastQueue * d
		from = end
	}
}

// merge doubles the bucket width, summing neighbouring buckets.
func (s *Series) merge() {
	n := (len(s.util) + 1) / 2
	for i := 0; i < n; i++ {
		u, q := s.util[2*i], s.queue[2*i]
		if 2*i+1 < len(s.util) {
			u += s.util[2*i+1]
			q += s.queue[2*i+1]
		}
		s.util[i], s.queue[i] = u, q
	}
	s.util, s.queue = s.util[:n], s.queue[:n]
	s.width *= 2
}

// Points returns the buckets up to end (the end of the run) as averages.
func (s *Series) Points(end time.Duration) []Point {
	if s.started && end > s.last {
		s.accumulate(s.last, end)
		s.last = end
	}
	pts := make([]Point, 0, len(s.util))
	for i := range s.util {
		start := time.Duration(i) * s.width
		w := s.width
		if start+w > end {
			w = end - start
		}
		if w <= 0 {
			break
		}
		p := Point{T: start, Queued: s.queue[i] / w.Seconds()}
		if s.gpus > 0 {
			p.Utilization = s.util[i] / w.Seconds() / s.gpus
		}
		pts = append(pts, p)
	}
	return pts
}
