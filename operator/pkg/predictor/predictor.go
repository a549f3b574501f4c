package predictor

import (
	"errors"
	"slices"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/profile"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Source names where a prediction came from, in order of preference.
type Source string

const (
	SourceEpochs  Source = "epochs"  // the job's own observed epochs
	SourceTraffic Source = "traffic" // dataset bytes / smoothed storage-read rate
	SourceProfile Source = "profile" // the model's trusted profile fit
	SourceUser    Source = "user"    // the user's declared run time
	SourcePrior   Source = "prior"   // the median of finished jobs of the queue
	SourceNone    Source = "none"    // nothing known: order by attained service
)

// Prediction is what the predictor knows about one job.
type Prediction struct {
	Source Source
	// EpochTime is the predicted epoch time at the job's allocation, 0 if the source
	// predicts only the total (a user estimate or a run-time prior for a job of unknown
	// epochs).
	EpochTime time.Duration
	// Total is the predicted execution time at the allocation, without overhead.
	Total time.Duration
	// Remaining is the predicted execution time still to go.
	Remaining time.Duration
}

// Known reports whether the prediction has a source.
func (p Prediction) Known() bool { return p.Source != SourceNone }

// Config tunes the predictor. The zero value is not useful; start from DefaultConfig.
type Config struct {
	// Smoothing picks the read-rate smoother.
	Smoothing SmoothingKind
	// Window and OutlierK configure SmoothMedian; Alpha, Reject and MaxRejects configure
	// SmoothEWMA.
	Window     int
	OutlierK   float64
	Alpha      float64
	Reject     float64
	MaxRejects int
	// MinTrafficSamples is how many read-rate samples a live estimate needs.
	MinTrafficSamples int
	// Fit says when a profile fit is trusted.
	Fit profile.FitConfig
	// MaxProfileSamples bounds the samples kept per model.
	MaxProfileSamples int
	// PriorWindow is how many finished jobs per queue the prior remembers (the most
	// recent), so that it follows a changing workload and costs a bounded sort.
	PriorWindow int
}

// DefaultConfig is a 9-sample windowed median with rejection at 3 MADs, live estimates
// from 2 samples, trusted fits over 4 jobs with at most 10% relative RMS residual.
func DefaultConfig() Config {
	return Config{
		Smoothing: SmoothMedian, Window: 9, OutlierK: 3,
		Alpha: 0.3, Reject: 2, MaxRejects: 3,
		MinTrafficSamples: 2,
		Fit:               profile.DefaultFitConfig(),
		MaxProfileSamples: profile.DefaultMaxSamples,
		PriorWindow:       1000,
	}
}

// jobState is what the predictor remembers about one unfinished job.
type jobState struct {
	traffic  Smoother
	epochSum time.Duration
	epochN   int32
	// workers is the job's size when it last started; an elastic job that restarts at
	// another size starts its epoch and traffic measurements anew.
	workers int32
	// published is epochN when the job's sample was last written to the profile.
	published int32
	first     *pending
	// owner and id say whose state of which job this is, and gone that the job finished:
	// a Job's Memo is trusted only when they match (memo).
	owner *Predictor
	id    string
	gone  bool
}

// pending is a prediction waiting to be scored.
type pending struct {
	p        Prediction
	profiled int
}

// Predictor predicts execution times; it is not safe for concurrent use (the policy
// that owns it serializes Observe and Schedule).
type Predictor struct {
	cfg   Config
	store profile.Store
	// fits caches the fit of every model in the store.
	fits   map[string]profile.Fit
	jobs   map[string]*jobState
	queues map[string]*prior
	scores []Score
	// storeErr is the first error the store returned; predictions go on from memory.
	storeErr error
	// revision counts the observations that changed what predictions rest on (Revision).
	revision uint64
}

// Revision counts the observations that changed what the predictions rest on, not only
// their progress: a model's fit moved, or a job's first epoch since it started replaced the
// profile, the estimate or the prior as its source. A policy that skips cycles on an
// unchanged snapshot decides again when it changed.
func (p *Predictor) Revision() uint64 { return p.revision }

var _ sched.Observer = (*Predictor)(nil)

// New returns a predictor over a profile store (nil means a fresh in-memory store); it
// loads the fits of every model already in the store.
func New(store profile.Store, cfg Config) *Predictor {
	if store == nil {
		store = profile.NewMemory()
	}
	p := &Predictor{cfg: cfg, store: store, fits: map[string]profile.Fit{},
		jobs: map[string]*jobState{}, queues: map[string]*prior{}}
	if all, err := store.List(); err != nil {
		p.storeErr = err
	} else {
		for _, pr := range all {
			p.fits[pr.Model] = profile.FitSamples(pr.Samples, cfg.Fit)
		}
	}
	return p
}

// StoreError returns the first error the profile store reported, if any.
func (p *Predictor) StoreError() error { return p.storeErr }

// Fit returns the current fit of a model (the zero Fit if none).
func (p *Predictor) Fit(model string) profile.Fit { return p.fits[model] }

// state returns the state of j, created if j has none, and keeps it in j's Memo.
func (p *Predictor) state(j *sched.Job) *jobState {
	if st := p.memo(j); st != nil {
		return st
	}
	st := p.jobs[j.ID]
	if st == nil {
		st = &jobState{traffic: p.newSmoother(), owner: p, id: j.ID}
		p.jobs[j.ID] = st
	}
	j.Memo = st
	return st
}

// memo returns the state that j's Memo refers to when it is this predictor's live state
// of j, nil otherwise.
func (p *Predictor) memo(j *sched.Job) *jobState {
	if st, ok := j.Memo.(*jobState); ok && st.owner == p && !st.gone && st.id == j.ID {
		return st
	}
	return nil
}

// lookup returns the state of j, nil if it has none.
func (p *Predictor) lookup(j *sched.Job) *jobState {
	if st := p.memo(j); st != nil {
		return st
	}
	return p.jobs[j.ID]
}

func (p *Predictor) newSmoother() Smoother {
	if p.cfg.Smoothing == SmoothEWMA {
		return &EWMA{Alpha: p.cfg.Alpha, Reject: p.cfg.Reject, MaxRejects: p.cfg.MaxRejects}
	}
	return NewWindowMedian(p.cfg.Window, p.cfg.OutlierK)
}

// Observe implements sched.Observer.
func (p *Predictor) Observe(ev sched.Event) {
	j := ev.Job
	if j == nil {
		return
	}
	switch ev.Kind {
	case sched.EventStarted:
		st := p.state(j)
		if st.workers != 0 && st.workers != j.Workers {
			st.traffic = p.newSmoother()
			st.epochSum, st.epochN, st.published = 0, 0, 0
		}
		st.workers = j.Workers
		if st.first == nil {
			st.first = &pending{p: p.Predict(j), profiled: p.fits[j.Model].N}
		}
	case sched.EventTraffic:
		if ev.Duration > 0 && ev.Bytes > 0 {
			p.state(j).traffic.Add(float64(ev.Bytes) / ev.Duration.Seconds())
		}
	case sched.EventEpoch:
		if ev.Duration <= 0 {
			return
		}
		st := p.state(j)
		st.epochSum += ev.Duration
		st.epochN++
		if st.epochN == 1 {
			p.revision++ // the job's own epochs are its source from now on
		}
		// Publish the job's sample at its 1st, 2nd, 4th, 8th... epoch: the mean settles
		// fast, and the database is written O(log epochs) times per job.
		if st.epochN >= 2*st.published || st.published == 0 {
			p.publish(j, st)
		}
	case sched.EventFinished:
		p.finish(j, ev)
	}
}

// publish writes the job's epoch-time sample to the model's profile and refits.
func (p *Predictor) publish(j *sched.Job, st *jobState) {
	st.published = st.epochN
	if j.Model == "" || j.GPUs() <= 0 {
		return
	}
	pr, err := p.store.Get(j.Model)
	if err != nil && !errors.Is(err, profile.ErrNotFound) {
		p.noteErr(err)
		return
	}
	pr.Model = j.Model
	pr.Add(profile.Sample{
		JobID: j.ID, GPUs: j.GPUs(), EpochTime: st.epochSum / time.Duration(st.epochN), Epochs: st.epochN,
		DatasetBytes: j.DatasetBytes, CheckpointBytes: j.CheckpointBytes,
	}, p.cfg.MaxProfileSamples)
	if err := p.store.Update(pr); err != nil {
		p.noteErr(err)
	}
	if f := profile.FitSamples(pr.Samples, p.cfg.Fit); f != p.fits[j.Model] {
		p.fits[j.Model] = f
		p.revision++
	}
}

func (p *Predictor) noteErr(err error) {
	if p.storeErr == nil {
		p.storeErr = err
	}
}

// finish scores the job's first prediction and feeds the queue prior.
func (p *Predictor) finish(j *sched.Job, ev sched.Event) {
	st := p.lookup(j)
	delete(p.jobs, j.ID)
	if st == nil {
		return
	}
	st.gone = true
	if st.epochN > 0 && st.published != st.epochN {
		p.publish(j, st)
	}
	var actual, epoch time.Duration
	switch {
	case st.epochN > 0 && j.Epochs > 0:
		epoch = st.epochSum / time.Duration(st.epochN)
		actual = epoch * time.Duration(j.Epochs)
	case ev.Duration > 0:
		actual = ev.Duration
	default:
		return
	}
	q := p.queues[j.Queue]
	if q == nil {
		q = &prior{window: p.cfg.PriorWindow}
		p.queues[j.Queue] = q
	}
	q.add(epoch, actual)
	if st.first != nil {
		fp := st.first
		p.scores = append(p.scores, Score{
			JobID: j.ID, Model: j.Model, Source: fp.p.Source, Profiled: fp.profiled,
			Predicted: fp.p.Total, Actual: actual,
			RelErr: (fp.p.Total.Seconds() - actual.Seconds()) / actual.Seconds(),
		})
	}
}

// Predict returns the prediction for j from the best source available now.
func (p *Predictor) Predict(j *sched.Job) Prediction {
	if st := p.lookup(j); st != nil {
		if st.epochN > 0 {
			return byEpoch(j, SourceEpochs, st.epochSum/time.Duration(st.epochN))
		}
		if j.EpochTime > 0 {
			return byEpoch(j, SourceEpochs, j.EpochTime)
		}
		if st.traffic.N() >= p.cfg.MinTrafficSamples && j.DatasetBytes > 0 {
			if rate, ok := st.traffic.Value(); ok && rate > 0 {
				return byEpoch(j, SourceTraffic, time.Duration(float64(j.DatasetBytes)/rate*float64(time.Second)))
			}
		}
	} else if j.EpochTime > 0 {
		return byEpoch(j, SourceEpochs, j.EpochTime)
	}
	if f, ok := p.fits[j.Model]; ok && f.Trusted && j.Epochs > 0 {
		return byEpoch(j, SourceProfile, f.At(j.GPUs()))
	}
	if j.UserEstimate > 0 {
		if j.Epochs > 0 {
			return byEpoch(j, SourceUser, j.UserEstimate/time.Duration(j.Epochs))
		}
		return byTotal(j, SourceUser, j.UserEstimate)
	}
	if q := p.queues[j.Queue]; q != nil && q.n() > 0 {
		if j.Epochs > 0 {
			if e := q.epochMedian(); e > 0 {
				return byEpoch(j, SourcePrior, e)
			}
		}
		return byTotal(j, SourcePrior, q.totalMedian())
	}
	return Prediction{Source: SourceNone}
}

// byEpoch predicts from an epoch time and the job's progress.
func byEpoch(j *sched.Job, src Source, epoch time.Duration) Prediction {
	if j.Epochs <= 0 {
		// Epoch count unknown: the epoch time alone says nothing about the total.
		return Prediction{Source: SourceNone, EpochTime: epoch}
	}
	total := epoch * time.Duration(j.Epochs)
	into := j.SinceCheckpoint
	if into > epoch {
		into = epoch
	}
	rem := epoch*time.Duration(j.Epochs-j.EpochsDone) - into
	if rem < 0 {
		rem = 0
	}
	return Prediction{Source: src, EpochTime: epoch, Total: total, Remaining: rem}
}

// byTotal predicts from a total run time and the run time attained so far. A job that has
// already run longer than the total is expected to run as long again as it has run (the
// heavy tail of job lengths makes the elapsed time the best guess of what is left).
func byTotal(j *sched.Job, src Source, total time.Duration) Prediction {
	var elapsed time.Duration
	if g := j.GPUs(); g > 0 {
		elapsed = j.Attained / time.Duration(g)
	}
	rem := total - elapsed
	if rem <= 0 {
		rem = elapsed
		total = 2 * elapsed
	}
	return Prediction{Source: src, Total: total, Remaining: rem}
}

// prior remembers the most recent finished jobs of a queue. Besides the window in
// arrival order it keeps the window's totals and positive epoch times sorted, updated at
// each add (a binary search and a copy of at most the window), so a median costs O(1):
// it is read at every prediction from a prior, and a queue's jobs finish all the time.
type prior struct {
	window        int
	epochs, total []time.Duration
	next          int
	// sortedTotal and sortedEpochs hold total and the positive values of epochs, sorted.
	sortedTotal, sortedEpochs []time.Duration
}

func (q *prior) n() int { return len(q.total) }

func (q *prior) add(epoch, total time.Duration) {
	if q.window <= 0 {
		q.window = 1000
	}
	if len(q.total) < q.window {
		q.epochs = append(q.epochs, epoch)
		q.total = append(q.total, total)
	} else {
		q.sortedTotal = removeSorted(q.sortedTotal, q.total[q.next])
		if e := q.epochs[q.next]; e > 0 {
			q.sortedEpochs = removeSorted(q.sortedEpochs, e)
		}
		q.epochs[q.next] = epoch
		q.total[q.next] = total
		q.next = (q.next + 1) % q.window
	}
	q.sortedTotal = insertSorted(q.sortedTotal, total)
	if epoch > 0 {
		q.sortedEpochs = insertSorted(q.sortedEpochs, epoch)
	}
}

func (q *prior) epochMedian() time.Duration { return medianSorted(q.sortedEpochs) }
func (q *prior) totalMedian() time.Duration { return medianSorted(q.sortedTotal) }

func insertSorted(s []time.Duration, v time.Duration) []time.Duration {
	i, _ := slices.BinarySearch(s, v)
	return slices.Insert(s, i, v)
}

func removeSorted(s []time.Duration, v time.Duration) []time.Duration {
	if i, ok := slices.BinarySearch(s, v); ok {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// medianSorted is the median of sorted s: its middle element, or the mean of its two
// middle elements; 0 if s is empty.
func medianSorted(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
