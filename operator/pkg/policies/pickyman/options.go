package pickyman

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/predictor"
	"github.com/pickyman/pickyman/operator/pkg/profile"
)

// Variant selects the policy or one of its ablations.
type Variant string

const (
	// Full is PickyMan: predicted times, the overhead model, a suspend mode per victim.
	Full Variant = ""
	// Blind ignores the overhead model: victims cost only the delay the waiting job's run
	// inflicts on them, and every victim is suspended now.
	Blind Variant = "blind"
	// Oracle uses the simulator's true remaining times instead of predictions.
	Oracle Variant = "oracle"
	// Now suspends every victim immediately (no boundary suspends).
	Now Variant = "now"
)

// Name is the registered name of the policy; the ablations register as Name-<variant>.
const Name = "pickyman"

// Reason is the preemption reason the policy reports.
const Reason = "OrderedDivision"

// Options configure the policy; start from DefaultOptions. New replaces the fields whose zero
// value is meaningless (MaxConsidered, MaxScan, Unknown, Budget, Gain, Predictor, Overhead) with their
// defaults.
type Options struct {
	Variant Variant
	// MaxConsidered bounds how many waiting jobs that do not fit get a victim search per
	// cycle (the first in queue order), which bounds the work of a cycle.
	MaxConsidered int
	// MaxScan bounds how many candidates, cheapest first, one victim search considers.
	MaxScan int
	// Refresh is the longest time between two full cycles when no job arrived, started,
	// was suspended or resumed, or finished (see Schedule).
	Refresh time.Duration
	// Aging is how many seconds a waiting job's sort key drops per second it has waited:
	// key = predicted remaining time - Aging x waiting time (see the package doc).
	Aging float64
	// Unknown is the remaining time assumed for a job nothing is known about, before its
	// attained service is added.
	Unknown time.Duration
	// Protect is how long a job is safe from preemption after it (re)started.
	Protect time.Duration
	// Budget is the most preemptions a job may suffer; a job that reached it is protected.
	Budget int32
	// GPUCostWeight weighs the GPU time a preemption wastes (resume, checkpoint write or
	// lost work and grace period, on the victim's GPUs) against the delay of the victim,
	// per GPU the victim frees.
	GPUCostWeight float64
	// Gain is how many times the cost of a victim group the waiting time it saves must
	// exceed before the group is preempted.
	Gain float64
	// FlatPriority treats every priority class alike: the queue order ignores classes and
	// any job may preempt any other. Off by default.
	FlatPriority bool
	// Promote is the class-aging step, the starvation guard across priority classes: a
	// waiting job's class in the queue order rises by one for every Promote it has waited,
	// up to the highest class waiting (0: classes are strict). Only the order changes: a
	// job never preempts a job of a higher class than its own. See the package doc.
	Promote time.Duration
	// QueueWait makes the natural wait of a waiting job count the waiting jobs ahead of it
	// that found neither GPUs nor victims, and takes as victims only jobs predicted to run
	// more than twice its remaining time. Off by default: it lowers mean waiting time on
	// lightly loaded clusters with bursts of arrivals and raises it under sustained
	// overload (docs/policy.md).
	QueueWait bool
	// Rigid turns elasticity off (the ablation): elastic jobs run only at the size they ask
	// for, are never shrunk or grown, and are preempted whole like any other.
	Rigid bool
	// Predictor, Overhead and Store configure the learning parts; a nil Store is an
	// in-memory profile database.
	Predictor predictor.Config
	Overhead  overhead.Params
	Store     profile.Store
}

// DefaultOptions returns the defaults documented in docs/policy.md.
func DefaultOptions() Options {
	return Options{
		MaxConsidered: 32,
		MaxScan:       256,
		Refresh:       10 * time.Minute,
		Aging:         0.1,
		Unknown:       time.Hour,
		Protect:       10 * time.Minute,
		Promote:       time.Hour,
		Budget:        4,
		GPUCostWeight: 1,
		Gain:          1,
		Predictor:     predictor.DefaultConfig(),
		Overhead:      overhead.DefaultParams(),
	}
}

func (o *Options) defaults() {
	d := DefaultOptions()
	if o.MaxConsidered <= 0 {
		o.MaxConsidered = d.MaxConsidered
	}
	if o.MaxScan <= 0 {
		o.MaxScan = d.MaxScan
	}
	if o.Aging < 0 {
		o.Aging = 0
	}
	if o.Unknown <= 0 {
		o.Unknown = d.Unknown
	}
	if o.Budget <= 0 {
		o.Budget = d.Budget
	}
	if o.Gain <= 0 {
		o.Gain = d.Gain
	}
	if o.Predictor.Window == 0 {
		o.Predictor = d.Predictor
	}
	if o.Overhead == (overhead.Params{}) {
		o.Overhead = d.Overhead
	}
}

// FromParams builds the policy registered as name ("pickyman", "pickyman-<variant>",
// "pickyman-flat": the full policy with FlatPriority, or "pickyman-rigid": with Rigid)
// from name=value parameters; it deletes every parameter it reads, so the caller can
// report the rest as unknown. Parameters: maxconsidered, maxscan, aging, unknown, protect, promote, queuewait, budget,
// gpucost, gain, refresh, start, writebw, readbw, grace (numbers; durations as Go durations or
// seconds), smoothing (median|ewma).
func FromParams(name string, params map[string]string) (*Policy, error) {
	o := DefaultOptions()
	switch name {
	case Name:
	case Name + "-" + string(Blind):
		o.Variant = Blind
	case Name + "-" + string(Oracle):
		o.Variant = Oracle
	case Name + "-" + string(Now):
		o.Variant = Now
	case Name + "-flat":
		o.FlatPriority = true
	case Name + "-rigid":
		o.Rigid = true
	default:
		return nil, fmt.Errorf("pickyman: unknown variant %q", name)
	}
	take := func(k string) (string, bool) {
		v, ok := params[k]
		delete(params, k)
		return v, ok
	}
	var err error
	num := func(k string, set func(float64)) {
		if v, ok := take(k); ok && err == nil {
			f, e := strconv.ParseFloat(v, 64)
			if e != nil {
				err = fmt.Errorf("parameter %s=%q: want a number", k, v)
				return
			}
			set(f)
		}
	}
	dur := func(k string, set func(time.Duration)) {
		if v, ok := take(k); ok && err == nil {
			if s, e := strconv.ParseFloat(v, 64); e == nil {
				set(time.Duration(s * float64(time.Second)))
				return
			}
			d, e := time.ParseDuration(v)
			if e != nil {
				err = fmt.Errorf("parameter %s=%q: want a duration (10m) or seconds", k, v)
				return
			}
			set(d)
		}
	}
	num("maxconsidered", func(f float64) { o.MaxConsidered = int(f) })
	num("maxscan", func(f float64) { o.MaxScan = int(f) })
	num("aging", func(f float64) { o.Aging = f })
	dur("unknown", func(d time.Duration) { o.Unknown = d })
	dur("refresh", func(d time.Duration) { o.Refresh = d })
	dur("protect", func(d time.Duration) { o.Protect = d })
	dur("promote", func(d time.Duration) { o.Promote = d })
	num("budget", func(f float64) { o.Budget = int32(f) })
	num("gpucost", func(f float64) { o.GPUCostWeight = f })
	num("gain", func(f float64) { o.Gain = f })
	// The overhead model's starting parameters (the operator passes its configuration's
	// overhead section here): container start plus warm-up, checkpoint write and read
	// bandwidth in bytes per second, and the termination grace period.
	dur("start", func(d time.Duration) { o.Overhead.Start = d })
	num("writebw", func(f float64) { o.Overhead.WriteBW = f })
	num("readbw", func(f float64) { o.Overhead.ReadBW = f })
	dur("grace", func(d time.Duration) { o.Overhead.Grace = d })
	if v, ok := take("queuewait"); ok && err == nil {
		b, e := strconv.ParseBool(v)
		if e != nil {
			err = fmt.Errorf("parameter queuewait=%q: want true or false", v)
		}
		o.QueueWait = b
	}
	if v, ok := take("flatpriority"); ok && err == nil {
		b, e := strconv.ParseBool(v)
		if e != nil {
			err = fmt.Errorf("parameter flatpriority=%q: want true or false", v)
		}
		o.FlatPriority = b
	}
	if v, ok := take("smoothing"); ok && err == nil {
		switch predictor.SmoothingKind(v) {
		case predictor.SmoothMedian, predictor.SmoothEWMA:
			o.Predictor.Smoothing = predictor.SmoothingKind(v)
		default:
			err = fmt.Errorf("parameter smoothing=%q: want median or ewma", v)
		}
	}
	if err != nil {
		return nil, err
	}
	return New(o), nil
}
