package sched

import (
	"time"
)

// Phase is where a job is in its life cycle.
type Phase string

const (
	// Queued: waiting for GPUs, never started or suspended and waiting to resume.
	Queued Phase = "Queued"
	// Running: holds its GPUs; it may still be paying resume overhead (see Job.WarmUntil).
	Running Phase = "Running"
	// Suspending: a preemption was decided; the job still holds its GPUs until it has
	// reached its epoch boundary and written its checkpoint (mode Boundary) or until the
	// grace period ends (mode Now).
	Suspending Phase = "Suspending"
	// Finished: completed; finished jobs are not part of a snapshot.
	Finished Phase = "Finished"
)

// SuspendMode says how a preempted job gives its GPUs back (docs/simulator.md).
type SuspendMode string

const (
	// SuspendBoundary runs on to the end of the current epoch, writes a checkpoint, then
	// frees the GPUs. No work is lost; the GPUs are freed late.
	SuspendBoundary SuspendMode = "Boundary"
	// SuspendNow frees the GPUs after the grace period; the work since the last checkpoint
	// is lost.
	SuspendNow SuspendMode = "Now"
)

// Slot is a part of a gang placement: GPUs on one node. A worker never spans nodes; a
// slot may hold several workers of the same job.
type Slot struct {
	Node    string
	Workers int32
	GPUs    int32
}

// Node is a GPU node of the cluster.
type Node struct {
	Name     string
	GPUModel string
	// GPUs is the node's allocatable GPU count.
	GPUs int32
	// Used is the number of GPUs promised to running and suspending jobs, and held by any
	// other pod on the node (the operator counts them; the simulator has none).
	Used int32
	// Unschedulable nodes keep their running jobs but take no new ones.
	Unschedulable bool
}

// Free is the number of GPUs not promised to any job.
func (n *Node) Free() int32 { return n.GPUs - n.Used }

// Job is a job as the scheduling core sees it. Fields an operator cannot observe (the
// Oracle) are set only by the simulator and may be read only by oracle policies.
type Job struct {
	ID       string
	Queue    string
	Priority int32
	// Model names the network being trained; it keys the model-profile database.
	Model string

	// Gang shape: Workers workers of GPUsPerWorker GPUs each, each worker on one node.
	Workers       int32
	GPUsPerWorker int32
	// GPUModel is the GPU model the job requires, or "" for any.
	GPUModel string
	// MinWorkers and MaxWorkers bound an elastic job's size (torchrun's elastic
	// min_nodes:max_nodes): it may start, resume and be resized to any worker count between
	// them, and Workers is its current size (the size it asks for while queued). Both are 0
	// for a rigid job, which runs on exactly Workers workers; see Elastic.
	MinWorkers, MaxWorkers int32

	Submit time.Time
	Phase  Phase

	// FirstStart is the first admission, zero if the job never ran.
	FirstStart time.Time
	// LastStart is the most recent admission (start or resume).
	LastStart time.Time
	// LastStop is when the job last gave its GPUs back after a preemption, zero if never.
	// With LastStart it gives the length of the last run, which starvation guards use.
	LastStop time.Time
	// WarmUntil is when resume overhead (container start, checkpoint load, warm-up) ends
	// after the most recent admission; the job makes no progress before it.
	WarmUntil time.Time
	// Preemptions counts how often the job was preempted.
	Preemptions int32

	// Attained is the GPU service received so far (GPU-time, the sum over admissions of
	// running time times GPUs), the quantity that least-attained-service policies sort by.
	Attained time.Duration

	// Training progress as an agent reports it.
	Epochs     int32 // total epochs, 0 if unknown
	EpochsDone int32 // epochs completed and checkpointed
	// EpochTime is the observed time of one epoch at the job's current allocation, 0 if
	// not observed yet.
	EpochTime time.Duration
	// SinceCheckpoint is the work done since the last checkpoint (time into the current
	// checkpoint period); a suspend now loses it.
	SinceCheckpoint time.Duration
	DatasetBytes    int64
	CheckpointBytes int64
	// UserEstimate is the run time the user declared for the job, 0 if none.
	UserEstimate time.Duration

	// Suspend is set while Phase is Suspending: the mode chosen and when GPUs free.
	Suspend *SuspendState

	// Placement is where the job runs (Running, Suspending); nil when queued.
	Placement []Slot
	// Reserved is a placement held for this queued job: GPUs freed by preemptions decided
	// for it. Other jobs may not take them.
	Reserved []Slot

	// Oracle is ground truth that only a simulator knows.
	Oracle Oracle

	// Memo is where the observer of the job's events (the policy's predictor) may keep a
	// reference to its own state of the job, written when it observes an event about this
	// Job and read at a prediction instead of a lookup by ID. A copy of the Job shares it;
	// the core never reads it.
	Memo any
}

// SuspendState describes a preemption or a resize in progress.
type SuspendState struct {
	Mode SuspendMode
	// Resize is the placement an elastic job continues on after its checkpoint (a resize,
	// see Preemption.Resize); nil for a suspend.
	Resize []Slot `json:",omitempty"`
	// For is the ID of the queued job the preemption frees GPUs for ("" if none).
	For string
	// Decided is when the preemption was decided.
	Decided time.Time
	// FreeAt is the expected time the GPUs become free.
	FreeAt time.Time
}

// Oracle carries what a simulator knows and an operator does not.
type Oracle struct {
	// Known reports whether the fields below are set.
	Known bool
	// Service is the job's total run time at its allocation, without overhead.
	Service time.Duration
	// Remaining is the run time still needed at its allocation, without overhead.
	Remaining time.Duration
}

// GPUs is the job's total GPU demand.
func (j *Job) GPUs() int32 { return j.Workers * j.GPUsPerWorker }

// Elastic reports whether the job may run on more than one worker count.
func (j *Job) Elastic() bool { return j.MinWorkers > 0 && j.MaxWorkers > j.MinWorkers }

// Sizes returns the worker counts the job may run on: [MinWorkers, MaxWorkers] for an
// elastic job, Workers alone for a rigid one.
func (j *Job) Sizes() (lo, hi int32) {
	if j.Elastic() {
		return j.MinWorkers, j.MaxWorkers
	}
	return j.Workers, j.Workers
}

// Resizing reports whether the job is suspending for a resize rather than a suspend.
func (j *Job) Resizing() bool { return j.Suspend != nil && j.Suspend.Resize != nil }

// Snapshot is the state a policy decides on. Policies must treat it as read-only.
type Snapshot struct {
	Now   time.Time
	Nodes []Node
	// Jobs holds every job that is not finished: queued, running and suspending.
	Jobs []*Job
}

// Start admits a queued job onto a placement.
type Start struct {
	JobID     string
	Placement []Slot
}

// Preemption suspends a running job, or resizes an elastic one.
//
// A resize (Resize set) is a suspend at the epoch boundary after which the job continues on
// the Resize placement instead of waiting in the queue: the job checkpoints, gives back the
// GPUs of its placement that Resize does not keep, and restarts at the new size from the
// checkpoint (torchrun's elastic restart). A grow promises the added GPUs at the decision
// (the job's Placement becomes the union of both); when the checkpoint is written the job
// is Queued with Resize as its own reservation, which AdmitReserved starts. Mode must be
// SuspendBoundary.
type Preemption struct {
	JobID string
	Mode  SuspendMode
	// For is the queued job the GPUs are freed for, "" if none.
	For string
	// Reason is a short CamelCase reason for events and metrics.
	Reason string
	// Resize is the elastic job's placement after the resize; nil for a suspend.
	Resize []Slot `json:",omitempty"`
}

// Reservation holds GPUs that are being freed for a queued job, so that no other job
// takes them before it can start.
type Reservation struct {
	JobID     string
	Placement []Slot
}

// Decisions is what a policy returns for one snapshot. Starts may use only free GPUs that
// are not reserved for another job.
type Decisions struct {
	Starts       []Start
	Preemptions  []Preemption
	Reservations []Reservation
}

// Policy decides, for a snapshot, which jobs to start and which to preempt. Schedule must
// not modify the snapshot and must be deterministic for a given snapshot and policy state.
type Policy interface {
	Name() string
	Schedule(s *Snapshot) Decisions
}

// Waker is implemented by a policy whose decisions can change while nothing happens to the
// jobs and nodes, because they depend on time: Tiresias demotes a running job when its
// attained service crosses a queue threshold; PickyMan looks again when a recency protection
// ends or class aging promotes a waiting job. After a Schedule call, NextWake returns the
// earliest time at which a cycle could decide something that cycle did not although no job
// arrived, started, was suspended, resumed or finished and no node changed; the zero time
// means that only such an event can change its decisions. A policy that does not implement
// Waker decides only at events (FIFO, SJF, SRTF, Kueue).
//
// The simulator runs a cycle only at events and at that time; the operator's scheduler
// requeues itself for it. Waking early is harmless (the cycle decides nothing new); waking
// late delays a decision.
type Waker interface {
	NextWake() time.Time
}

// EventKind names what happened to a job.
type EventKind string

const (
	EventSubmitted EventKind = "Submitted"
	EventStarted   EventKind = "Started"
	EventEpoch     EventKind = "Epoch"
	// EventTraffic reports storage read traffic of a running job over a window; the agent
	// samples it periodically, long before the first epoch ends.
	EventTraffic   EventKind = "Traffic"
	EventSuspended EventKind = "Suspended"
	EventResumed   EventKind = "Resumed"
	EventFinished  EventKind = "Finished"
)

// Event is an observation the operator or simulator reports to a policy that learns.
type Event struct {
	Kind EventKind
	Time time.Time
	Job  *Job
	// Duration is the measured duration of what the event reports: the epoch time for
	// EventEpoch, the suspend delay (decision to GPUs free) for EventSuspended, the resume
	// overhead for EventResumed, the total run time for EventFinished, the sampling window
	// for EventTraffic.
	Duration time.Duration
	// Bytes is the storage read traffic measured over the epoch (EventEpoch) or the window
	// (EventTraffic).
	Bytes int64
}

// Observer is implemented by policies that learn from what happens (the PickyMan
// predictor and overhead model). The operator and the simulator call Observe for every
// event, in time order.
type Observer interface {
	Observe(ev Event)
}
