package overhead

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func running(id string, into time.Duration) *sched.Job {
	return &sched.Job{ID: id, Model: "m", Workers: 1, GPUsPerWorker: 4, Phase: sched.Running,
		Epochs: 10, EpochsDone: 3, SinceCheckpoint: into, CheckpointBytes: 1e9,
		FirstStart: t0, LastStart: t0, WarmUntil: t0.Add(50 * time.Second)}
}

func TestEstimate(t *testing.T) {
	m := New(DefaultParams())
	now := t0.Add(time.Hour)
	tests := map[string]struct {
		job       *sched.Job
		now       time.Time
		want      Estimate
		wantDelay time.Duration
		wantMode  sched.SuspendMode
	}{
		"early in the epoch: suspend now": {
			job: running("a", 10*time.Second), now: now,
			want: Estimate{Into: 10 * time.Second, ToBoundary: 590 * time.Second, Write: 2 * time.Second,
				Grace: 30 * time.Second, Resume: 51 * time.Second},
			wantDelay: 592 * time.Second, wantMode: sched.SuspendNow,
		},
		"late in the epoch: run on to the boundary": {
			job: running("b", 580*time.Second), now: now,
			want: Estimate{Into: 580 * time.Second, ToBoundary: 20 * time.Second, Write: 2 * time.Second,
				Grace: 30 * time.Second, Resume: 51 * time.Second},
			wantDelay: 22 * time.Second, wantMode: sched.SuspendBoundary,
		},
		"warming up: boundary frees at once": {
			job: running("c", 0), now: t0.Add(10 * time.Second),
			want: Estimate{ToBoundary: 600 * time.Second, Write: 2 * time.Second, Grace: 30 * time.Second,
				Resume: 51 * time.Second, AtCheckpoint: true},
			wantDelay: 0, wantMode: sched.SuspendBoundary,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := m.Estimate(tc.job, 10*time.Minute, tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Estimate (-want +got):\n%s", diff)
			}
			if d := got.BoundaryDelay(); d != tc.wantDelay {
				t.Errorf("BoundaryDelay = %v, want %v", d, tc.wantDelay)
			}
			if mode := got.Choose(); mode != tc.wantMode {
				t.Errorf("Choose = %v, want %v", mode, tc.wantMode)
			}
		})
	}
}

func TestLastEpochFinishes(t *testing.T) {
	j := running("a", 100*time.Second)
	j.EpochsDone = 9
	e := New(DefaultParams()).Estimate(j, 10*time.Minute, t0.Add(time.Hour))
	if !e.Finishes || e.BoundaryDelay() != 500*time.Second {
		t.Errorf("estimate = %+v, boundary delay %v; want a finish after 500 s with no write", e, e.BoundaryDelay())
	}
}

// TestLearning plays a job's start, a boundary suspend and a resume with overheads unlike
// the defaults, and checks the model learns them and scores its predictions.
func TestLearning(t *testing.T) {
	m := New(DefaultParams())
	j := running("a", 0)
	j.WarmUntil = t0.Add(80 * time.Second) // 80 s start, not the default 50 s
	m.Observe(sched.Event{Kind: sched.EventStarted, Time: t0, Job: j})
	if got := m.Params("m").Start; got != 80*time.Second {
		t.Fatalf("Start = %v after one observed start, want 80s", got)
	}

	// Preempt at the boundary 500 s into a 600 s epoch; the checkpoint (1 GB) takes 4 s.
	decided := t0.Add(time.Hour)
	j.SinceCheckpoint = 500 * time.Second
	est := m.Estimate(j, 600*time.Second, decided)
	m.Expect(j, sched.SuspendBoundary, est, decided)
	if got, want := est.BoundaryDelay(), 102*time.Second; got != want {
		t.Fatalf("predicted boundary delay = %v, want %v (100 s to the boundary + 2 s at 500 MB/s)", got, want)
	}
	epochEnd := decided.Add(100 * time.Second)
	m.Observe(sched.Event{Kind: sched.EventEpoch, Time: epochEnd, Job: j, Duration: 600 * time.Second})
	m.Observe(sched.Event{Kind: sched.EventSuspended, Time: epochEnd.Add(4 * time.Second), Job: j, Duration: 104 * time.Second})
	if got := m.Params("m").WriteBW; math.Abs(got-250e6) > 1 {
		t.Errorf("WriteBW = %v, want 250 MB/s learned from a 4 s write of 1 GB", got)
	}
	// Resume takes 80 s start + 2 s load: read bandwidth 500 MB/s.
	m.Observe(sched.Event{Kind: sched.EventResumed, Time: decided.Add(time.Hour), Job: j, Duration: 82 * time.Second})
	if got := m.Params("m").ReadBW; math.Abs(got-500e6) > 1 {
		t.Errorf("ReadBW = %v, want 500 MB/s", got)
	}
	// Another model learns from the cluster-wide observations.
	if got := m.Params("other").Start; got != 80*time.Second {
		t.Errorf("other model's Start = %v, want the cluster's 80s", got)
	}

	want := []Score{
		{JobID: "a", Kind: KindSuspend, Mode: sched.SuspendBoundary, Predicted: 102 * time.Second, Observed: 104 * time.Second, RelErr: -2.0 / 104},
		{JobID: "a", Kind: KindResume, Mode: sched.SuspendBoundary, Predicted: 81 * time.Second, Observed: 82 * time.Second, RelErr: -1.0 / 82},
	}
	if diff := cmp.Diff(want, m.Scores()); diff != "" {
		t.Errorf("Scores (-want +got):\n%s", diff)
	}
	// The job's own resume is the prediction of its next one.
	if got := m.Estimate(j, 600*time.Second, decided.Add(3*time.Hour)).Resume; got != 82*time.Second {
		t.Errorf("next resume estimate = %v, want the observed 82s", got)
	}
	if got := len(m.OverheadErrors()); got != 2 {
		t.Errorf("OverheadErrors has %d values, want 2", got)
	}
}

func TestGraceLearned(t *testing.T) {
	m := New(DefaultParams())
	j := running("a", 10*time.Second)
	now := t0.Add(time.Hour)
	m.Expect(j, sched.SuspendNow, m.Estimate(j, time.Minute, now), now)
	m.Observe(sched.Event{Kind: sched.EventSuspended, Time: now.Add(45 * time.Second), Job: j, Duration: 45 * time.Second})
	if got := m.Params("m").Grace; got != 45*time.Second {
		t.Errorf("Grace = %v, want 45s", got)
	}
	if s := m.Scores(); len(s) != 1 || math.Abs(s[0].RelErr-(30.0-45)/45) > 1e-12 {
		t.Errorf("Scores = %+v, want one with error -1/3", s)
	}
}
