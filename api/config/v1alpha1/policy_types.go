package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Policy names a registered policy (fifo, sjf, srtf, tiresias, kueue, pickyman and its
// ablations) and holds its arguments. Only the arguments of the named policy may be set:
// fifo for fifo, tiresias for tiresias, pickyman for pickyman and every pickyman-<variant>;
// sjf, srtf and kueue take none. An unset field keeps the policy's default.
type Policy struct {
	Name     string        `json:"name"`
	FIFO     *FIFOArgs     `json:"fifo,omitempty"`
	Tiresias *TiresiasArgs `json:"tiresias,omitempty"`
	PickyMan *PickyManArgs `json:"pickyman,omitempty"`
}

// FIFOArgs are the arguments of the fifo policy.
type FIFOArgs struct {
	// Backfill lets later jobs start in GPUs the blocked head of the queue does not need.
	Backfill bool `json:"backfill,omitempty"`
}

// TiresiasArgs are the arguments of the tiresias policy.
type TiresiasArgs struct {
	// Thresholds split attained GPU service into len(Thresholds)+1 queues; they must be
	// positive and increasing. Empty keeps the default (one threshold at 1h).
	Thresholds []metav1.Duration `json:"thresholds,omitempty"`
	// StarveLimit promotes a queued job back to the first queue once it has waited this
	// many times the length of its last run; 0 (the default) disables promotion.
	StarveLimit float64 `json:"starveLimit,omitempty"`
}

// PickyManArgs are the arguments of the pickyman policy and its ablations; the defaults are
// documented in docs/policy.md. The protection and overhead sections of the configuration
// give the policy its preemption protection and the overhead model's starting parameters.
type PickyManArgs struct {
	// MaxConsidered bounds how many waiting jobs that do not fit get a victim search per
	// cycle.
	MaxConsidered *int32 `json:"maxConsidered,omitempty"`
	// MaxScan bounds how many candidates one victim search considers.
	MaxScan *int32 `json:"maxScan,omitempty"`
	// Refresh, if positive, is the longest time between two full cycles when nothing
	// changed (default 0: cycles at events and when a protection ends or class aging
	// promotes a waiting job, nothing more).
	Refresh *metav1.Duration `json:"refresh,omitempty"`
	// Aging is how many seconds a waiting job's sort key drops per second it has waited.
	Aging *float64 `json:"aging,omitempty"`
	// Unknown is the remaining time assumed for a job nothing is known about.
	Unknown *metav1.Duration `json:"unknown,omitempty"`
	// Promote is the class-aging step across priority classes; 0 keeps classes strict.
	Promote *metav1.Duration `json:"promote,omitempty"`
	// GPUCostWeight weighs the GPU time a preemption wastes against the victim's delay.
	GPUCostWeight *float64 `json:"gpuCostWeight,omitempty"`
	// Gain is how many times a victim group's cost the waiting time it saves must exceed.
	Gain *float64 `json:"gain,omitempty"`
	// QueueWait counts the waiting jobs ahead of a job in its natural wait.
	QueueWait *bool `json:"queueWait,omitempty"`
	// Exchange, if positive, adds the exchange test to the benefit test when the queue is
	// backlogged: a victim group also pays when its shortest predicted remaining time,
	// less the time until its GPUs are free, exceeds Gain x the victims' costs; victims
	// must be predicted to run more than Exchange x the waiting job's remaining time (0,
	// the default: off).
	Exchange *float64 `json:"exchange,omitempty"`
	// BudgetEvery, if positive, raises a job's preemption budget (protection's
	// maxPreemptions) by one for every BudgetEvery it has run (0, the default: off).
	BudgetEvery *metav1.Duration `json:"budgetEvery,omitempty"`
	// WaitFloor, if positive, makes the natural wait of a waiting job at least this many
	// times the time it has already waited (0, the default: off).
	WaitFloor *float64 `json:"waitFloor,omitempty"`
	// HoldAfter, if positive, keeps for the first waiting job of a cycle that has waited
	// this long and found neither GPUs nor victims the free GPUs on the nodes where it is
	// nearest to fitting (0, the default: off).
	HoldAfter *metav1.Duration `json:"holdAfter,omitempty"`
	// FlatPriority treats every priority class alike.
	FlatPriority *bool `json:"flatPriority,omitempty"`
	// Smoothing is how the predictor smooths epoch times: median or ewma.
	Smoothing string `json:"smoothing,omitempty"`
}

// PolicyValidator checks a policy and its arguments; the policy registry provides it
// (operator/pkg/policies.Validate), since only the registry knows which names exist and
// which arguments each takes.
// +kubebuilder:object:generate=false
type PolicyValidator func(p Policy, path *field.Path) field.ErrorList
