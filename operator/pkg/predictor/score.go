package predictor

import (
	"math"
	"time"
)

// Score is one scored prediction: the execution time predicted at a job's first start
// against the execution time it had.
type Score struct {
	JobID, Model string
	Source       Source
	// Profiled is how many jobs of the model the profile database held at the prediction.
	Profiled  int
	Predicted time.Duration
	Actual    time.Duration
	// RelErr is (Predicted - Actual) / Actual.
	RelErr float64
}

// Scores returns every scored prediction, in the order the jobs finished.
func (p *Predictor) Scores() []Score { return append([]Score(nil), p.scores...) }

// PredictionErrors returns the relative error (predicted - actual) / actual of every
// job's execution time as predicted at its first start (metrics.PredictionReporter).
func (p *Predictor) PredictionErrors() []float64 {
	out := make([]float64, 0, len(p.scores))
	for _, s := range p.scores {
		if s.Source != SourceNone {
			out = append(out, s.RelErr)
		}
	}
	return out
}

// Summary condenses scores: how many, how many had a source, and the fraction within 10%.
type Summary struct {
	Jobs, Known int
	Within10    float64
	MeanAbs     float64
}

// Summarize condenses the scores that keep returns true for.
func Summarize(scores []Score, keep func(Score) bool) Summary {
	var s Summary
	var in int
	for _, sc := range scores {
		if keep != nil && !keep(sc) {
			continue
		}
		s.Jobs++
		if sc.Source == SourceNone {
			continue
		}
		s.Known++
		a := math.Abs(sc.RelErr)
		s.MeanAbs += a
		if a <= 0.10 {
			in++
		}
	}
	if s.Known > 0 {
		s.MeanAbs /= float64(s.Known)
		s.Within10 = float64(in) / float64(s.Known)
	}
	return s
}
