package overhead

import (
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Kind names the overhead a score is about.
type Kind string

const (
	// KindSuspend: decision to GPUs free.
	KindSuspend Kind = "suspend"
	// KindResume: readmission to progress.
	KindResume Kind = "resume"
)

// Score is one predicted overhead against the observed one.
type Score struct {
	JobID     string
	Kind      Kind
	Mode      sched.SuspendMode
	Predicted time.Duration
	Observed  time.Duration
	// RelErr is (Predicted - Observed) / Observed; 0 when both are 0.
	RelErr float64
}

func (m *Model) score(j *sched.Job, kind Kind, mode sched.SuspendMode, pred, obs time.Duration) {
	if pred < 0 {
		return
	}
	s := Score{JobID: j.ID, Kind: kind, Mode: mode, Predicted: pred, Observed: obs}
	switch {
	case obs > 0:
		s.RelErr = (pred - obs).Seconds() / obs.Seconds()
	case pred == 0:
		s.RelErr = 0
	default:
		return // nothing observed to divide by: not scored
	}
	m.scores = append(m.scores, s)
}

// Scores returns every scored overhead in the order observed.
func (m *Model) Scores() []Score { return append([]Score(nil), m.scores...) }

// OverheadErrors returns the relative error of every scored overhead
// (metrics.OverheadReporter).
func (m *Model) OverheadErrors() []float64 {
	out := make([]float64, len(m.scores))
	for i, s := range m.scores {
		out[i] = s.RelErr
	}
	return out
}
