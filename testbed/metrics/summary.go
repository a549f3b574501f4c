package metrics

import "time"

// Run is the raw outcome of one policy on one trace.
type Run struct {
	Policy string
	// GPUs is the cluster's GPU count.
	GPUs int32
	Jobs []JobRecord
	// Series is the utilization and queue-length time series.
	Series []Point
	// Events is the number of simulation events processed; Cycles the policy calls.
	Events int64
	Cycles int64
	// Wall is the wall-clock time the run took.
	Wall time.Duration
	// PredictionErrors and OverheadErrors are relative errors reported by the policy
	// (nil if it reports none).
	PredictionErrors []float64
	OverheadErrors   []float64
}

// Summary is the per-run figures of docs/simulator.md. Times are in seconds.
type Summary struct {
	Jobs     int `json:"jobs"`
	Rejected int `json:"rejected"`
	// Wait, JCT and Queueing describe finished jobs.
	Wait     Dist `json:"wait_s"`
	JCT      Dist `json:"jct_s"`
	Queueing Dist `json:"queueing_s"`
	// Makespan is first submit to last completion.
	Makespan float64 `json:"makespan_s"`
	// Utilization is allocated GPU-time / (GPUs x makespan).
	Utilization float64 `json:"utilization"`
	// UsefulUtilization is service GPU-time / (GPUs x makespan).
	UsefulUtilization float64 `json:"useful_utilization"`
	Preemptions       int64   `json:"preemptions"`
	Resizes           int64   `json:"resizes,omitempty"`
	GPUHoursLost      float64 `json:"gpu_hours_lost"`
	// Prediction and Overhead are the relative errors the policy reported, if any.
	Prediction *Dist `json:"prediction_error,omitempty"`
	Overhead   *Dist `json:"overhead_error,omitempty"`
}

// Summarize computes the per-run figures of r.
func Summarize(r *Run) Summary {
	var s Summary
	var wait, jct, queueing []float64
	first, last := time.Duration(-1), time.Duration(0)
	var allocated, useful float64
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if j.Rejected {
			s.Rejected++
			continue
		}
		s.Jobs++
		wait = append(wait, j.Wait().Seconds())
		jct = append(jct, j.JCT().Seconds())
		queueing = append(queueing, j.Queueing().Seconds())
		if first < 0 || j.Submit < first {
			first = j.Submit
		}
		if j.Finish > last {
			last = j.Finish
		}
		if j.GPUTime > 0 {
			allocated += j.GPUTime.Seconds()
		} else {
			allocated += j.Held.Seconds() * float64(j.GPUs)
		}
		useful += j.Service.Seconds() * float64(j.GPUs)
		s.Preemptions += int64(j.Preemptions)
		s.Resizes += int64(j.Resizes)
		s.GPUHoursLost += j.GPUSecondsLost() / 3600
	}
	s.Wait, s.JCT, s.Queueing = Describe(wait), Describe(jct), Describe(queueing)
	if s.Jobs > 0 {
		s.Makespan = (last - first).Seconds()
	}
	if s.Makespan > 0 && r.GPUs > 0 {
		capacity := s.Makespan * float64(r.GPUs)
		s.Utilization = allocated / capacity
		s.UsefulUtilization = useful / capacity
	}
	if len(r.PredictionErrors) > 0 {
		d := Describe(r.PredictionErrors)
		s.Prediction = &d
	}
	if len(r.OverheadErrors) > 0 {
		d := Describe(r.OverheadErrors)
		s.Overhead = &d
	}
	return s
}

// PredictionReporter is implemented by policies that predict execution time. It returns
// the relative error (predicted - actual) / actual of every prediction scored so far.
type PredictionReporter interface {
	PredictionErrors() []float64
}

// OverheadReporter is implemented by policies that predict suspend and resume overhead. It
// returns the relative error of every overhead prediction scored so far.
type OverheadReporter interface {
	OverheadErrors() []float64
}
