package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// job is the simulator's state of one job. s is what the policy sees (the snapshot holds
// &s); the rest is ground truth and accounting. Times are offsets from Epoch; progress is
// measured in work time at the job's allocation, from 0 to work.
type job struct {
	s   sched.Job
	rec metrics.JobRecord

	work      time.Duration // total service
	epochs    int32
	epochLen  time.Duration // T; the last epoch ends at work
	ckptEvery time.Duration // CheckpointPeriod x T

	// Per-job noise factors (1 when noise is off).
	nStart, nRead, nWrite, nTraffic float64

	gen    uint32 // invalidates finish, free and warm events of an earlier admission
	resGen uint32 // invalidates reservation timeouts
	resAt  time.Duration

	// Progress of the current admission: p(t) = min(limit, p0 + rate x max(0, t-runFrom)).
	// Progress is work time at the requested size (baseWorkers); rate is the speed at the
	// current size relative to it, exactly 1 for a job at its requested size.
	p0, limit, runFrom time.Duration
	rate               float64
	baseWorkers        int32
	// varied: the job ran at another size than requested; productive sums the time it
	// made progress (at any rate), for the end-of-run accounting check.
	varied     bool
	productive time.Duration
	// segStart is when the job's held GPUs last changed (admission or grow), for GPUTime.
	segStart time.Duration
	// ckpt is the progress of the last checkpoint the job can resume from, apart from the
	// periodic ones (the resume point of the current admission, or a suspend's checkpoint).
	ckpt time.Duration

	lastStart, warmUntil time.Duration
	resumed              bool // the current admission is a resume
	warmReported         bool
	attainedBase         time.Duration

	// Preemption in progress.
	decided, stopAt, freeAt time.Duration

	// Observation reporting.
	reportedP, reportedT time.Duration

	finished bool
	// order is the job's place in submit order (Engine.jobs), which keeps Engine.holders
	// in the same order as the snapshot.
	order int
}

// newJob builds a job's state on the gang Shape gives.
func newJob(tj *traces.Job, cfg *Config, maxNode int32) *job {
	j := &job{work: tj.Duration, epochs: tj.Epochs}
	if j.epochs <= 0 {
		j.epochs = 1
	}
	if j.work < time.Duration(j.epochs) {
		j.epochs = 1
	}
	j.epochLen = j.work / time.Duration(j.epochs)
	if j.epochLen <= 0 {
		j.epochLen = 1
	}
	j.ckptEvery = j.epochLen * time.Duration(cfg.Physics.CheckpointPeriod)
	j.limit = j.work
	workers, per, minW, maxW := Shape(tj, cfg.Seed, cfg.Elastic, maxNode)
	j.s = sched.Job{
		ID:              tj.ID,
		Queue:           tj.Queue,
		Priority:        tj.Priority,
		Model:           tj.Model,
		Workers:         workers,
		MinWorkers:      minW,
		MaxWorkers:      maxW,
		GPUsPerWorker:   per,
		GPUModel:        tj.GPUModel,
		Submit:          Epoch.Add(tj.Submit),
		Phase:           sched.Queued,
		Epochs:          j.epochs,
		DatasetBytes:    tj.DatasetBytes,
		CheckpointBytes: tj.CheckpointBytes,
		Oracle:          sched.Oracle{Known: true, Service: j.work, Remaining: j.work},
	}
	j.rate, j.baseWorkers = 1, workers
	j.rec = metrics.JobRecord{ID: tj.ID, GPUs: j.s.GPUs(), Submit: tj.Submit, Service: j.work}
	j.nStart, j.nRead, j.nWrite, j.nTraffic = 1, 1, 1, 1
	if sigma := cfg.Physics.NoiseSigma; sigma > 0 {
		h := fnv.New64a()
		h.Write([]byte(tj.ID))
		r := rand.New(rand.NewPCG(uint64(cfg.Seed), h.Sum64()))
		draw := func() float64 { return math.Exp(sigma * r.NormFloat64()) }
		j.nStart, j.nRead, j.nWrite, j.nTraffic = draw(), draw(), draw(), draw()
	}
	return j
}

// Shape is the gang a trace job runs as, and its elastic bounds (0, 0 when rigid): the
// trace's workers of GPUsPerWorker GPUs; a gang whose worker shape the trace did not give
// and whose worker does not fit the largest node (maxNode GPUs) is reshaped into the fewest
// equal workers that fit (GPUsPerWorker becomes the largest divisor of its GPUs that is at
// most maxNode). A job of 2 GPUs or more in the elastic share (chosen by its ID and seed)
// may run from half its workers to e.Grow times them; one whose single worker's shape the
// trace did not give runs one worker per GPU, so that it can change size. The replay builds
// its jobs with the same shapes.
func Shape(tj *traces.Job, seed int64, e Elasticity, maxNode int32) (workers, per, lo, hi int32) {
	workers, per = tj.Workers, tj.GPUsPerWorker
	if workers <= 0 || per <= 0 || workers*per != tj.GPUs {
		workers, per = 1, tj.GPUs
	}
	shapeFree := tj.Synthesized.Has(traces.FieldWorkers) || tj.Workers <= 0
	if per > maxNode && maxNode > 0 && shapeFree {
		g := workers * per
		for per = maxNode; per > 1 && g%per != 0; per-- {
		}
		workers = g / per
	}
	elastic := workers*per >= 2 && chosen(tj.ID, seed, e.Share)
	if elastic && workers == 1 && shapeFree {
		workers, per = per, 1
	}
	if elastic && workers >= 2 {
		lo, hi = (workers+1)/2, workers*max(1, e.Grow)
	}
	return workers, per, lo, hi
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// chosen reports whether job id is in the share picked by seed (a hash, so the choice does
// not depend on the trace's order or the policy).
func chosen(id string, seed int64, share float64) bool {
	if share <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	var b [8]byte
	for i := range b {
		b[i] = byte(seed >> (8 * i))
	}
	h.Write(b[:])
	return float64(h.Sum64()>>11)/float64(1<<53) < share
}

// elapsed converts progress at the current rate into time.
func (j *job) elapsed(dp time.Duration) time.Duration {
	if j.rate == 1 {
		return dp
	}
	return time.Duration(math.Ceil(float64(dp) / j.rate))
}

// startOverhead is the time from admission until progress resumes.
func (j *job) startOverhead(ph *Physics, resume bool) time.Duration {
	if ph.Ideal {
		return 0
	}
	d := ph.StartDelay + scale(ph.ContainerStart+ph.WarmUp, j.nStart)
	if resume {
		d += overhead.Transfer(j.s.CheckpointBytes, ph.ReadBandwidth, j.nRead)
	}
	return d
}

// writeTime is the time to write the job's checkpoint at a boundary suspend.
func (j *job) writeTime(ph *Physics) time.Duration {
	if ph.Ideal {
		return 0
	}
	return overhead.Transfer(j.s.CheckpointBytes, ph.WriteBandwidth, j.nWrite)
}

// progressAt is the work done at time t in the current admission.
func (j *job) progressAt(t time.Duration) time.Duration {
	p := j.p0
	if t > j.runFrom {
		if j.rate == 1 {
			p += t - j.runFrom
		} else {
			p += scale(t-j.runFrom, j.rate)
		}
	}
	if p > j.limit {
		p = j.limit
	}
	return p
}

// timeToReach is when the current admission reaches progress x (x >= p0).
func (j *job) timeToReach(x time.Duration) time.Duration { return j.runFrom + j.elapsed(x-j.p0) }

// checkpointFloor is the progress of the last checkpoint at or before p.
func (j *job) checkpointFloor(p time.Duration) time.Duration {
	if p >= j.work {
		return j.work
	}
	c := p / j.ckptEvery * j.ckptEvery
	if c < j.ckpt && j.ckpt <= p {
		c = j.ckpt
	}
	return c
}

// epochsAt is the number of epochs completed at progress p.
func (j *job) epochsAt(p time.Duration) int32 {
	if p >= j.work {
		return j.epochs
	}
	e := int32(p / j.epochLen)
	if e > j.epochs {
		e = j.epochs
	}
	return e
}

// epochEnd is the progress at the end of epoch e (1-based); the last ends at work.
func (j *job) epochEnd(e int32) time.Duration {
	if e >= j.epochs {
		return j.work
	}
	return time.Duration(e) * j.epochLen
}

// boundaryAfter is the epoch boundary at which a boundary suspend decided at progress p
// checkpoints: p itself if p is exactly an epoch end, else the end of the current epoch.
func (j *job) boundaryAfter(p time.Duration) time.Duration {
	if p > 0 && p%j.epochLen == 0 {
		return p
	}
	return j.epochEnd(j.epochsAt(p) + 1)
}

// refresh updates the fields a policy observes for a job that holds GPUs at time t.
func (j *job) refresh(t time.Duration) {
	p := j.progressAt(t)
	c := j.checkpointFloor(p)
	j.s.EpochsDone = j.epochsAt(c)
	j.s.SinceCheckpoint = j.elapsed(p - c)
	j.s.Attained = j.attainedBase + (t-j.lastStart)*time.Duration(j.s.GPUs())
	j.s.Oracle.Remaining = j.elapsed(j.work - p)
	if j.s.EpochTime == 0 && j.epochsAt(p) >= 1 && t > j.runFrom {
		j.s.EpochTime = j.elapsed(j.epochLen)
	}
}
