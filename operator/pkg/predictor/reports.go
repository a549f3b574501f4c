package predictor

import "time"

// RateReports turns reports of jobs' smoothed storage read rates, each stamped with the
// time it was taken (an agent's progress report), into traffic samples for EventTraffic:
// each report newer than the job's previous one stands for the rate over the time since it.
// A job's first report only sets its start; a report with no rate or time, or not newer than
// the last, gives nothing. The zero value is ready to use.
type RateReports struct {
	last map[string]time.Time
}

// Sample records job id's report of rate bytes per second taken at at, and returns the
// traffic it stands for: the time since the job's previous report and the bytes read in it.
func (r *RateReports) Sample(id string, at time.Time, rate float64) (d time.Duration, bytes int64, ok bool) {
	if rate <= 0 || at.IsZero() {
		return 0, 0, false
	}
	prev, had := r.last[id]
	if had && !at.After(prev) {
		return 0, 0, false
	}
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	r.last[id] = at
	if !had {
		return 0, 0, false
	}
	d = at.Sub(prev)
	return d, int64(rate * d.Seconds()), true
}

// Forget drops job id's reports, so its next report starts again.
func (r *RateReports) Forget(id string) { delete(r.last, id) }

// Retain forgets every job that live does not hold.
func (r *RateReports) Retain(live map[string]bool) {
	for id := range r.last {
		if !live[id] {
			delete(r.last, id)
		}
	}
}
