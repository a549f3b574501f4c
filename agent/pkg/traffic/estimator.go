package traffic

import (
	"math"
	"time"
)

// Config tunes an Estimator; the zero value of a field selects its default.
type Config struct {
	// Alpha is the EWMA weight of a new sample (default 0.2).
	Alpha float64
	// K is the outlier threshold in deviations (default 4).
	K float64
	// MinRelDev floors the deviation at this fraction of the mean (default 0.1).
	MinRelDev float64
	// MaxRejects consecutive outliers restart the estimate (default 3).
	MaxRejects int
	// Warmup is the number of accepted samples before outliers are rejected (default 3).
	Warmup int
	// MinInterval is the shortest interval a sample spans (default 1 s): a sample closer
	// to the previous one is left to the next, so that reads in batches do not give
	// intervals that see a whole batch or none.
	MinInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Alpha <= 0 || c.Alpha > 1 {
		c.Alpha = 0.2
	}
	if c.K <= 0 {
		c.K = 4
	}
	if c.MinRelDev <= 0 {
		c.MinRelDev = 0.1
	}
	if c.MaxRejects <= 0 {
		c.MaxRejects = 3
	}
	if c.Warmup <= 0 {
		c.Warmup = 3
	}
	if c.MinInterval <= 0 {
		c.MinInterval = time.Second
	}
	return c
}

// Estimator smooths a cumulative byte counter into a read rate (see the package doc). It is
// not safe for concurrent use.
type Estimator struct {
	cfg Config

	last      time.Time
	lastBytes int64
	primed    bool // a first counter value is known

	mean, dev float64
	accepted  int
	rejected  []float64 // consecutive rejected rates

	// Total counts the bytes observed across counter resets.
	total int64
	// Rejects counts every rejected sample.
	rejects int
}

// NewEstimator returns an estimator with cfg (zero fields take their defaults).
func NewEstimator(cfg Config) *Estimator { return &Estimator{cfg: cfg.withDefaults()} }

// Observe records the counter value bytes at time t. Samples must come in time order; a
// sample less than MinInterval after the previous one is ignored (the next spans its
// interval too). It reports whether the sample moved the estimate.
func (e *Estimator) Observe(t time.Time, bytes int64) bool {
	if !e.primed {
		e.last, e.lastBytes, e.primed = t, bytes, true
		return false
	}
	if t.Sub(e.last) < e.cfg.MinInterval {
		return false
	}
	dt := t.Sub(e.last).Seconds()
	delta := bytes - e.lastBytes
	e.last, e.lastBytes = t, bytes
	if delta < 0 { // counter reset
		return false
	}
	if delta == 0 && e.accepted == 0 { // not reading yet (container start, warm-up)
		return false
	}
	e.total += delta
	return e.add(float64(delta) / dt)
}

// add feeds one interval rate.
func (e *Estimator) add(r float64) bool {
	if e.accepted == 0 {
		e.mean, e.dev, e.accepted = r, r/2, 1
		return true
	}
	dev := math.Max(e.dev, e.cfg.MinRelDev*e.mean)
	if e.accepted >= e.cfg.Warmup && math.Abs(r-e.mean) > e.cfg.K*dev {
		e.rejects++
		e.rejected = append(e.rejected, r)
		if len(e.rejected) < e.cfg.MaxRejects {
			return false
		}
		// A lasting change: restart from the rejected samples.
		var sum float64
		for _, x := range e.rejected {
			sum += x
		}
		e.mean = sum / float64(len(e.rejected))
		e.dev = e.mean / 2
		e.accepted = 1
		e.rejected = e.rejected[:0]
		return true
	}
	e.rejected = e.rejected[:0]
	a := e.cfg.Alpha
	e.dev = (1-a)*e.dev + a*math.Abs(r-e.mean)
	e.mean = (1-a)*e.mean + a*r
	e.accepted++
	return true
}

// Rate is the smoothed rate in bytes per second, 0 before the first interval.
func (e *Estimator) Rate() float64 { return e.mean }

// Total is the bytes observed since the first sample, summed across counter resets.
func (e *Estimator) Total() int64 { return e.total }

// Rejected is the number of samples rejected as outliers.
func (e *Estimator) Rejected() int { return e.rejects }

// EpochTime predicts the time of an epoch that reads datasetBytes at the smoothed rate; 0 if
// no rate is known.
func (e *Estimator) EpochTime(datasetBytes int64) time.Duration {
	if e.mean <= 0 || datasetBytes <= 0 {
		return 0
	}
	return time.Duration(float64(datasetBytes) / e.mean * float64(time.Second))
}
