package predictor

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// jobBuilder builds sched.Jobs for tests.
type jobBuilder struct{ j sched.Job }

func makeJob(id string) *jobBuilder {
	return &jobBuilder{j: sched.Job{ID: id, Queue: "q", Model: "resnet50", Workers: 1, GPUsPerWorker: 1,
		Epochs: 10, DatasetBytes: 100e9, Submit: t0, Phase: sched.Queued}}
}
func (b *jobBuilder) model(m string) *jobBuilder  { b.j.Model = m; return b }
func (b *jobBuilder) queue(q string) *jobBuilder  { b.j.Queue = q; return b }
func (b *jobBuilder) gpus(w, g int32) *jobBuilder { b.j.Workers, b.j.GPUsPerWorker = w, g; return b }
func (b *jobBuilder) epochs(n, done int32) *jobBuilder {
	b.j.Epochs, b.j.EpochsDone = n, done
	return b
}
func (b *jobBuilder) into(d time.Duration) *jobBuilder { b.j.SinceCheckpoint = d; return b }
func (b *jobBuilder) user(d time.Duration) *jobBuilder { b.j.UserEstimate = d; return b }
func (b *jobBuilder) attained(d time.Duration) *jobBuilder {
	b.j.Attained = d
	return b
}
func (b *jobBuilder) obj() *sched.Job { j := b.j; return &j }

// runJob feeds the events of a job that runs epochs epochs of length epoch.
func runJob(p *Predictor, j *sched.Job, epoch time.Duration) {
	p.Observe(sched.Event{Kind: sched.EventStarted, Time: t0, Job: j})
	for e := int32(0); e < j.Epochs; e++ {
		p.Observe(sched.Event{Kind: sched.EventEpoch, Time: t0, Job: j, Duration: epoch, Bytes: j.DatasetBytes})
	}
	p.Observe(sched.Event{Kind: sched.EventFinished, Time: t0, Job: j, Duration: epoch * time.Duration(j.Epochs)})
}

func TestFallbacks(t *testing.T) {
	const min = time.Minute
	tests := map[string]struct {
		setup func(p *Predictor)
		job   *sched.Job
		want  Prediction
	}{
		"nothing known": {
			job:  makeJob("x").obj(),
			want: Prediction{Source: SourceNone},
		},
		"queue prior: median epoch of finished jobs times epochs": {
			setup: func(p *Predictor) {
				for i, e := range []time.Duration{1 * min, 3 * min, 100 * min} {
					runJob(p, makeJob(string(rune('a'+i))).model("m"+string(rune('a'+i))).epochs(2, 0).obj(), e)
				}
			},
			job:  makeJob("x").model("other").epochs(10, 0).obj(),
			want: Prediction{Source: SourcePrior, EpochTime: 3 * min, Total: 30 * min, Remaining: 30 * min},
		},
		"prior of another queue is not used": {
			setup: func(p *Predictor) { runJob(p, makeJob("a").queue("other").obj(), min) },
			job:   makeJob("x").obj(),
			want:  Prediction{Source: SourceNone},
		},
		"user estimate beats the prior": {
			setup: func(p *Predictor) { runJob(p, makeJob("a").model("m").obj(), min) },
			job:   makeJob("x").model("other").epochs(10, 4).user(100 * min).obj(),
			want:  Prediction{Source: SourceUser, EpochTime: 10 * min, Total: 100 * min, Remaining: 60 * min},
		},
		"user estimate without epochs counts attained time": {
			job:  makeJob("x").epochs(0, 0).gpus(2, 2).user(100 * min).attained(4 * 30 * min).obj(),
			want: Prediction{Source: SourceUser, Total: 100 * min, Remaining: 70 * min},
		},
		"trusted profile beats the user estimate": {
			setup: func(p *Predictor) {
				// t(G) = 60 + 240/G seconds.
				for i, g := range []int32{1, 2, 4, 8} {
					e := time.Duration(60+240/g) * time.Second
					runJob(p, makeJob(string(rune('a'+i))).gpus(1, g).epochs(3, 0).obj(), e)
				}
			},
			job:  makeJob("x").gpus(2, 2).epochs(10, 0).user(time.Hour).obj(),
			want: Prediction{Source: SourceProfile, EpochTime: 2 * min, Total: 20 * min, Remaining: 20 * min},
		},
		"three profiled jobs are not enough": {
			setup: func(p *Predictor) {
				for i, g := range []int32{1, 2, 4} {
					runJob(p, makeJob(string(rune('a'+i))).gpus(1, g).epochs(3, 0).queue("other").obj(), time.Duration(60+240/g)*time.Second)
				}
			},
			job:  makeJob("x").gpus(2, 2).obj(),
			want: Prediction{Source: SourceNone},
		},
		"live traffic beats the profile": {
			setup: func(p *Predictor) {
				for i, g := range []int32{1, 2, 4, 8} {
					runJob(p, makeJob(string(rune('a'+i))).gpus(1, g).epochs(3, 0).obj(), time.Duration(60+240/g)*time.Second)
				}
				x := makeJob("x").obj()
				p.Observe(sched.Event{Kind: sched.EventStarted, Job: x})
				// 100 GB at 50 MB/s: a 2000 s epoch.
				for i := 0; i < 3; i++ {
					p.Observe(sched.Event{Kind: sched.EventTraffic, Job: x, Duration: time.Minute, Bytes: 3e9})
				}
			},
			job:  makeJob("x").epochs(10, 2).into(1000 * time.Second).obj(),
			want: Prediction{Source: SourceTraffic, EpochTime: 2000 * time.Second, Total: 20000 * time.Second, Remaining: 15000 * time.Second},
		},
		"observed epochs beat traffic": {
			setup: func(p *Predictor) {
				x := makeJob("x").obj()
				p.Observe(sched.Event{Kind: sched.EventStarted, Job: x})
				for i := 0; i < 3; i++ {
					p.Observe(sched.Event{Kind: sched.EventTraffic, Job: x, Duration: time.Minute, Bytes: 3e9})
				}
				p.Observe(sched.Event{Kind: sched.EventEpoch, Job: x, Duration: 10 * min})
				p.Observe(sched.Event{Kind: sched.EventEpoch, Job: x, Duration: 12 * min})
			},
			job:  makeJob("x").epochs(10, 2).obj(),
			want: Prediction{Source: SourceEpochs, EpochTime: 11 * min, Total: 110 * min, Remaining: 88 * min},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := New(nil, DefaultConfig())
			if tc.setup != nil {
				tc.setup(p)
			}
			got := p.Predict(tc.job)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoring(t *testing.T) {
	p := New(nil, DefaultConfig())
	// Four 1-GPU jobs of resnet50 with epoch time 60 + 240/G s profile the model ...
	for i, g := range []int32{1, 2, 4, 8} {
		runJob(p, makeJob(string(rune('a'+i))).gpus(1, g).epochs(5, 0).obj(), time.Duration(60+240/g)*time.Second)
	}
	// ... so the fifth, on 4 GPUs, is predicted exactly at its first start.
	runJob(p, makeJob("e").gpus(2, 2).epochs(7, 0).obj(), 2*time.Minute)
	scores := p.Scores()
	if len(scores) != 5 {
		t.Fatalf("got %d scores, want 5", len(scores))
	}
	last := scores[4]
	if last.Source != SourceProfile || last.Profiled != 4 || math.Abs(last.RelErr) > 1e-9 {
		t.Errorf("fifth job's score = %+v, want source profile, 4 profiled, error 0", last)
	}
	if scores[0].Source != SourceNone {
		t.Errorf("first job's source = %q, want none", scores[0].Source)
	}
	// The first job had nothing; the second to fourth had the queue prior (60+240 s
	// epochs of job a): job b's actual epoch is 180 s, so its error is 300/180 - 1.
	if got, want := scores[1].RelErr, 300.0/180-1; math.Abs(got-want) > 1e-9 {
		t.Errorf("second job's error = %v, want %v", got, want)
	}
	if got := len(p.PredictionErrors()); got != 4 {
		t.Errorf("PredictionErrors has %d values, want 4 (jobs with a source)", got)
	}
	if fit := p.Fit("resnet50"); !fit.Trusted || fit.N != 5 {
		t.Errorf("fit = %+v, want trusted over 5 jobs", fit)
	}
}

func TestProfileLearnsFromEpochsBeforeFinish(t *testing.T) {
	p := New(nil, DefaultConfig())
	for i, g := range []int32{1, 2, 4, 8} {
		j := makeJob(string(rune('a'+i))).gpus(1, g).obj()
		p.Observe(sched.Event{Kind: sched.EventStarted, Job: j})
		p.Observe(sched.Event{Kind: sched.EventEpoch, Job: j, Duration: time.Duration(60+240/g) * time.Second})
	}
	if got := p.Predict(makeJob("x").gpus(1, 4).epochs(2, 0).obj()); got.Source != SourceProfile || got.Total != 240*time.Second {
		t.Errorf("Predict = %+v, want the profile's 2 x 120 s from four running jobs' first epochs", got)
	}
}

// TestRevision: the revision moves when a job's first epoch makes its own epochs its source
// and when a published sample moves its model's fit; not at an epoch that changes neither.
func TestRevision(t *testing.T) {
	p := New(nil, DefaultConfig())
	j := makeJob("a").obj()
	epoch := func(d time.Duration) uint64 {
		p.Observe(sched.Event{Kind: sched.EventEpoch, Time: t0, Job: j, Duration: d})
		return p.Revision()
	}
	p.Observe(sched.Event{Kind: sched.EventStarted, Time: t0, Job: j})
	r0 := p.Revision()
	r1 := epoch(time.Minute) // first epoch, and the first sample of the model
	if r1 <= r0 {
		t.Fatalf("revision %d after the first epoch, want more than %d", r1, r0)
	}
	if r2 := epoch(time.Minute); r2 != r1 {
		t.Errorf("revision %d after an epoch that moved nothing (the sample's mean is the same), want %d", r2, r1)
	}
	r3 := epoch(time.Minute) // epoch 3: not published (1, 2, 4, 8...)
	if r4 := epoch(5 * time.Minute); r4 <= r3 {
		t.Errorf("revision %d after the 4th epoch moved the mean and the fit, want more than %d", r4, r3)
	}
}

// TestPriorMedians checks the prior's sorted windows against the medians of its window
// sorted afresh, through the window's wrap-around and with epoch times that are unknown (0).
func TestPriorMedians(t *testing.T) {
	median := func(xs []time.Duration) time.Duration {
		s := slices.Sorted(slices.Values(xs))
		if len(s) == 0 {
			return 0
		}
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	q := &prior{window: 7}
	var epochs, totals []time.Duration
	for i := range 40 {
		e := time.Duration(i*37%11) * time.Second // 0 (unknown) every 11th job
		tot := time.Duration(i*53%17+1) * time.Minute
		q.add(e, tot)
		epochs, totals = append(epochs, e), append(totals, tot)
		if len(totals) > 7 {
			epochs, totals = epochs[1:], totals[1:]
		}
		pos := slices.DeleteFunc(slices.Clone(epochs), func(d time.Duration) bool { return d <= 0 })
		if got, want := q.totalMedian(), median(totals); got != want {
			t.Fatalf("after %d adds: total median %v, want %v", i+1, got, want)
		}
		if got, want := q.epochMedian(), median(pos); got != want {
			t.Fatalf("after %d adds: epoch median %v, want %v", i+1, got, want)
		}
	}
}

// TestMemo: a Job's Memo answers only for the predictor that wrote it, for the job it was
// written for, and until that job finishes; any other case reads the predictor's own state.
func TestMemo(t *testing.T) {
	epochs := func(p *Predictor, j *sched.Job) Source { return p.Predict(j).Source }
	p, other := New(nil, DefaultConfig()), New(nil, DefaultConfig())
	j := makeJob("a").model("").obj()
	p.Observe(sched.Event{Kind: sched.EventStarted, Time: t0, Job: j})
	p.Observe(sched.Event{Kind: sched.EventEpoch, Time: t0, Job: j, Duration: time.Minute})
	if got := epochs(p, j); got != SourceEpochs {
		t.Fatalf("source %q for the observed job, want %q", got, SourceEpochs)
	}
	// Another predictor has seen nothing of the job.
	if got := epochs(other, j); got != SourceNone {
		t.Errorf("another predictor: source %q, want %q (it read the first one's state)", got, SourceNone)
	}
	// A copy renamed to another job has no state.
	c := *j
	c.ID = "b"
	if got := epochs(p, &c); got != SourceNone {
		t.Errorf("copy as job b: source %q, want %q", got, SourceNone)
	}
	// Another Job value of the same job (as the operator builds each cycle) reads it by ID.
	if got := epochs(p, makeJob("a").model("").obj()); got != SourceEpochs {
		t.Errorf("a fresh Job of job a: source %q, want %q", got, SourceEpochs)
	}
	// After the job finished its state is gone, Memo or not.
	p.Observe(sched.Event{Kind: sched.EventFinished, Time: t0, Job: makeJob("a").model("").obj(), Duration: time.Minute})
	if got := epochs(p, j); got == SourceEpochs {
		t.Errorf("finished job: source %q, want its own epochs forgotten", got)
	}
	// A new job of the same ID starts afresh, and j's stale Memo does not hide it.
	k := makeJob("a").model("").obj()
	p.Observe(sched.Event{Kind: sched.EventStarted, Time: t0, Job: k})
	p.Observe(sched.Event{Kind: sched.EventEpoch, Time: t0, Job: k, Duration: 2 * time.Minute})
	if got := p.Predict(j); got.Source != SourceEpochs || got.EpochTime != 2*time.Minute {
		t.Errorf("new job a through the old Job: %+v, want the new job's 2m epochs", got)
	}
}
