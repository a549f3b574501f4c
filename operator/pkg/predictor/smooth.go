package predictor

import (
	"math"
	"slices"
)

// Smoother turns a stream of noisy read-rate samples (bytes per second) into one estimate.
type Smoother interface {
	// Add records a sample; non-positive and non-finite samples are ignored.
	Add(x float64)
	// Value returns the estimate and whether there is one.
	Value() (float64, bool)
	// N is the number of samples accepted so far.
	N() int
}

// SmoothingKind names a Smoother.
type SmoothingKind string

const (
	// SmoothMedian is the windowed median with outlier rejection (the default).
	SmoothMedian SmoothingKind = "median"
	// SmoothEWMA is the exponentially weighted moving average with outlier rejection.
	SmoothEWMA SmoothingKind = "ewma"
)

// WindowMedian estimates the rate as the median of the last Size samples after dropping
// the samples farther than K scaled median absolute deviations (MAD x 1.4826, the standard
// deviation of a normal sample) from the window's median.
//
// Read traffic is bursty: data loaders prefetch, page caches hit for a while and then miss,
// a checkpoint or a neighbour shares the link. Those bursts are short and large; a median
// ignores them entirely as long as they are fewer than half the window, and it needs no
// tuning of a time constant. Its cost is two sorts of Size values per Value after new
// samples; Add only stores the sample (a simulator reports traffic far more often than a
// policy reads the rate). Not safe for concurrent use.
type WindowMedian struct {
	Size int
	K    float64

	buf     []float64
	next    int
	n       int
	value   float64
	stale   bool
	scratch []float64
	dev     []float64
}

// NewWindowMedian returns a WindowMedian over size samples with rejection at k MADs.
func NewWindowMedian(size int, k float64) *WindowMedian {
	if size < 1 {
		size = 1
	}
	return &WindowMedian{Size: size, K: k, buf: make([]float64, 0, size)}
}

// Add implements Smoother.
func (w *WindowMedian) Add(x float64) {
	if !(x > 0) || math.IsInf(x, 0) {
		return
	}
	if len(w.buf) < w.Size {
		w.buf = append(w.buf, x)
	} else {
		w.buf[w.next] = x
	}
	w.next = (w.next + 1) % w.Size
	w.n++
	w.stale = true
}

// Value implements Smoother.
func (w *WindowMedian) Value() (float64, bool) {
	if w.stale {
		w.value = robustMedian(w.buf, w.K, &w.scratch, &w.dev)
		w.stale = false
	}
	return w.value, w.n > 0
}

// N implements Smoother.
func (w *WindowMedian) N() int { return w.n }

// robustMedian returns the median of xs after dropping points more than k scaled MADs from
// the median. With a zero MAD (over half the points equal) nothing is dropped.
func robustMedian(xs []float64, k float64, scratch, devs *[]float64) float64 {
	s := append((*scratch)[:0], xs...)
	slices.Sort(s)
	med := median(s)
	dev := (*devs)[:0]
	for _, x := range s {
		dev = append(dev, math.Abs(x-med))
	}
	*devs = dev
	slices.Sort(dev)
	mad := 1.4826 * median(dev)
	if mad > 0 && k > 0 {
		kept := s[:0]
		for _, x := range s {
			if math.Abs(x-med) <= k*mad {
				kept = append(kept, x)
			}
		}
		s = kept
	}
	*scratch = s
	return median(s)
}

// median of sorted values.
func median(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// EWMA is an exponentially weighted moving average, v = v + Alpha (x - v), that rejects a
// sample that deviates from the current average by more than a factor Reject in either
// direction (x > v·Reject or x < v/Reject). After MaxRejects rejections in a row the next
// sample is taken whatever it is, so a real change of rate (a new allocation, a slower
// storage tier) is followed.
//
// It costs O(1) per sample and reacts smoothly, but a burst still moves it by Alpha times
// the burst, so it is the better choice only when samples are many and bursts mild.
type EWMA struct {
	Alpha      float64
	Reject     float64
	MaxRejects int

	v        float64
	n        int
	rejected int
}

// Add implements Smoother.
func (e *EWMA) Add(x float64) {
	if !(x > 0) || math.IsInf(x, 0) {
		return
	}
	if e.n == 0 {
		e.v, e.n = x, 1
		return
	}
	if e.Reject > 1 && (x > e.v*e.Reject || x < e.v/e.Reject) && e.rejected < e.MaxRejects {
		e.rejected++
		return
	}
	e.rejected = 0
	e.v += e.Alpha * (x - e.v)
	e.n++
}

// Value implements Smoother.
func (e *EWMA) Value() (float64, bool) { return e.v, e.n > 0 }

// N implements Smoother.
func (e *EWMA) N() int { return e.n }
