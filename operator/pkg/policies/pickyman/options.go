package pickyman

import (
	"time"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"

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
	// Refresh, if positive, is the longest time between two full cycles when no job
	// arrived, started, was suspended or resumed, or finished, no protection ended and no
	// waiting job was promoted (see Schedule); NextWake asks for a cycle then. 0 (the
	// default) polls never: between events a saving can only shrink (docs/policy.md).
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
	// BudgetEvery, if positive, raises a job's budget by one for every BudgetEvery it has
	// run (attained service over its GPUs): a long job may then be preempted in proportion
	// to its length instead of becoming a fixture after Budget preemptions, and large gangs
	// find whole nodes to free. 0 (the default): the budget is Budget for every job.
	BudgetEvery time.Duration
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
	// Exchange, if positive, adds a second way for a victim group to pay when q's queue is
	// backlogged (the waiting jobs behind q ask for more GPUs of q's model than are free):
	// the exchange test, which counts the waiting jobs behind q, with victims only among
	// the jobs predicted to run more than Exchange x T_q plus their overhead (exchange.go).
	// 0 (the default): off (docs/policy.md, "Why SRTF waits less").
	Exchange float64
	// WaitFloor, if positive, makes the natural wait a benefit test uses at least WaitFloor
	// x the time the waiting job has already waited: the natural wait assumes that the GPUs
	// running jobs free go to the job, and a job that has waited long past such estimates
	// (a large gang whose nodes small jobs keep refilling) is evidence that they do not.
	// 0 (the default): off.
	WaitFloor float64
	// HoldAfter, if positive, keeps for the first waiting job of a cycle that has waited at
	// least this long and found neither free GPUs nor a victim group that pays the free
	// GPUs on the nodes where it is nearest to fitting (hold), so that small jobs stop
	// taking, one by one, the GPUs a large gang waits for. 0 (the default): off.
	HoldAfter time.Duration
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
		Refresh:       0,
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

// ApplyArgs sets the options a's fields set (its arguments in the operator's
// configuration, checked by configv1.ValidatePickyManArgs); nil changes nothing.
func (o *Options) ApplyArgs(a *configv1.PickyManArgs) {
	if a == nil {
		return
	}
	if a.MaxConsidered != nil {
		o.MaxConsidered = int(*a.MaxConsidered)
	}
	if a.MaxScan != nil {
		o.MaxScan = int(*a.MaxScan)
	}
	if a.Refresh != nil {
		o.Refresh = a.Refresh.Duration
	}
	if a.Aging != nil {
		o.Aging = *a.Aging
	}
	if a.Unknown != nil {
		o.Unknown = a.Unknown.Duration
	}
	if a.Promote != nil {
		o.Promote = a.Promote.Duration
	}
	if a.GPUCostWeight != nil {
		o.GPUCostWeight = *a.GPUCostWeight
	}
	if a.Gain != nil {
		o.Gain = *a.Gain
	}
	if a.QueueWait != nil {
		o.QueueWait = *a.QueueWait
	}
	if a.BudgetEvery != nil {
		o.BudgetEvery = a.BudgetEvery.Duration
	}
	if a.Exchange != nil {
		o.Exchange = *a.Exchange
	}
	if a.WaitFloor != nil {
		o.WaitFloor = *a.WaitFloor
	}
	if a.HoldAfter != nil {
		o.HoldAfter = a.HoldAfter.Duration
	}
	if a.FlatPriority != nil {
		o.FlatPriority = *a.FlatPriority
	}
	if a.Smoothing != "" {
		o.Predictor.Smoothing = predictor.SmoothingKind(a.Smoothing)
	}
}
