package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllocationPhase is where a job is in PickyMan's life cycle.
// +kubebuilder:validation:Enum=Queued;Admitted;Preempting;Suspended;Finished
type AllocationPhase string

const (
	AllocationQueued     AllocationPhase = "Queued"
	AllocationAdmitted   AllocationPhase = "Admitted"
	AllocationPreempting AllocationPhase = "Preempting"
	AllocationSuspended  AllocationPhase = "Suspended"
	AllocationFinished   AllocationPhase = "Finished"
)

// Condition types of an Allocation; each also appears as an event on the job.
const (
	ConditionQueued     = "Queued"
	ConditionAdmitted   = "Admitted"
	ConditionPreempting = "Preempting"
	ConditionSuspended  = "Suspended"
	ConditionResumed    = "Resumed"
	ConditionFinished   = "Finished"
)

// SuspendMode says how a preempted job gives its GPUs back.
// +kubebuilder:validation:Enum=Boundary;Now
type SuspendMode string

const (
	// SuspendBoundary: run to the end of the epoch, checkpoint, then free the GPUs.
	SuspendBoundary SuspendMode = "Boundary"
	// SuspendNow: checkpoint if possible within the deadline, the rest of the epoch is lost.
	SuspendNow SuspendMode = "Now"
)

// JobReference names the training job an Allocation belongs to.
type JobReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// PodSet is a group of identical workers of a gang.
type PodSet struct {
	// Name is the replica type (Master, Worker).
	Name string `json:"name"`
	// Count is the number of pods.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
	// GPUsPerPod is the nvidia.com/gpu limit of each pod.
	// +kubebuilder:validation:Minimum=0
	GPUsPerPod int32 `json:"gpusPerPod"`
	// GPUModel is the GPU product the pods require, "" for any.
	// +optional
	GPUModel string `json:"gpuModel,omitempty"`
}

// ElasticSpec bounds the pod set of an elastic job whose size may change (a PyTorchJob's
// Worker replicas under its elasticPolicy): PickyMan may start, resume and resize the job
// with any count from MinCount to MaxCount.
type ElasticSpec struct {
	PodSet string `json:"podSet"`
	// +kubebuilder:validation:Minimum=1
	MinCount int32 `json:"minCount"`
	// +kubebuilder:validation:Minimum=1
	MaxCount int32 `json:"maxCount"`
	// ReferenceCount is the count the job's epoch time and schedule refer to (the
	// pickyman.dev/elastic-reference annotation); 0 means MaxCount.
	// +optional
	ReferenceCount int32 `json:"referenceCount,omitempty"`
}

// NodeAssignment is the placement of some pods of one pod set on one node.
type NodeAssignment struct {
	PodSet string `json:"podSet"`
	Node   string `json:"node"`
	Pods   int32  `json:"pods"`
	GPUs   int32  `json:"gpus"`
}

// AllocationSpec is the gang a job asks for. The operator writes it from the job.
type AllocationSpec struct {
	Job   JobReference `json:"job"`
	Queue string       `json:"queue"`
	// Priority is larger for more important jobs.
	Priority int32 `json:"priority"`
	// Model keys the ModelProfile used to predict the job.
	// +optional
	Model string `json:"model,omitempty"`
	// +listType=atomic
	PodSets []PodSet `json:"podSets"`
	// Epochs is the job's number of epochs, 0 if unknown.
	// +optional
	Epochs int32 `json:"epochs,omitempty"`
	// DatasetBytes and CheckpointBytes override the model profile's sizes.
	// +optional
	DatasetBytes int64 `json:"datasetBytes,omitempty"`
	// +optional
	CheckpointBytes int64 `json:"checkpointBytes,omitempty"`
	// EstimateSeconds is the user's run-time estimate, 0 if none.
	// +optional
	EstimateSeconds int64 `json:"estimateSeconds,omitempty"`
	// Elastic is set for an elastic job. PodSets then hold the job's current size, which
	// the operator changes when it resizes the job.
	// +optional
	Elastic *ElasticSpec `json:"elastic,omitempty"`
}

// CheckpointRequest is the operator's request that a job checkpoint and stop.
type CheckpointRequest struct {
	// ID identifies the request; acknowledgements carry it.
	ID string `json:"id"`
	// Mode is Boundary or Now.
	Mode SuspendMode `json:"mode"`
	// Deadline is when the operator suspends the job whether or not every worker has
	// acknowledged.
	Deadline metav1.Time `json:"deadline"`
	// For is the queued job the GPUs are freed for, if any.
	// +optional
	For string `json:"for,omitempty"`
	// Reason is a CamelCase reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Requested is when the request was made.
	Requested metav1.Time `json:"requested"`
	// Resize is the placement an elastic job restarts on after this checkpoint (a shrink or
	// a grow); empty for a suspend. While the job is Preempting for a grow, Placement
	// already holds the added GPUs.
	// +optional
	// +listType=atomic
	Resize []NodeAssignment `json:"resize,omitempty"`
}

// AllocationStatus is the operator's record of the job; the operator recovers all its
// state from it after a restart.
type AllocationStatus struct {
	// +optional
	Phase AllocationPhase `json:"phase,omitempty"`
	// Placement is where the gang runs while Admitted or Preempting.
	// +optional
	// +listType=atomic
	Placement []NodeAssignment `json:"placement,omitempty"`
	// Reserved is a placement held for the job while it is Queued: GPUs that preemptions
	// decided for it are freeing. Other jobs may not take them.
	// +optional
	// +listType=atomic
	Reserved []NodeAssignment `json:"reserved,omitempty"`
	// ReservedAt is when Reserved was last set; a reservation expires after the
	// configured reservation timeout.
	// +optional
	ReservedAt *metav1.Time `json:"reservedAt,omitempty"`
	// Checkpoint is the request in flight while Preempting.
	// +optional
	Checkpoint *CheckpointRequest `json:"checkpoint,omitempty"`
	// ResumeEpoch is the epoch the job starts from when it is next admitted.
	// +optional
	ResumeEpoch int32 `json:"resumeEpoch,omitempty"`
	// ResumePath is the checkpoint the job resumes from, as the acknowledgements named it.
	// +optional
	ResumePath string `json:"resumePath,omitempty"`
	// EpochsDone is the last epoch the job reported complete.
	// +optional
	EpochsDone int32 `json:"epochsDone,omitempty"`
	// +optional
	FirstAdmitted *metav1.Time `json:"firstAdmitted,omitempty"`
	// +optional
	LastAdmitted *metav1.Time `json:"lastAdmitted,omitempty"`
	// LastStopped is when the job last gave its GPUs back after a preemption.
	// +optional
	LastStopped *metav1.Time `json:"lastStopped,omitempty"`
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`
	// AttainedGPUSeconds is the GPU service received in earlier admissions (the current
	// admission's service is computed from LastAdmitted).
	// +optional
	AttainedGPUSeconds int64 `json:"attainedGPUSeconds,omitempty"`
	// Preemptions counts the job's preemptions.
	// +optional
	Preemptions int32 `json:"preemptions,omitempty"`
	// Resizes counts the shrinks and grows of an elastic job (not preemptions: they do not
	// use up its preemption budget).
	// +optional
	Resizes int32 `json:"resizes,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Allocation is PickyMan's record of one training job's gang: what it asks for, where it
// runs, and the checkpoint handshake in flight. It is owned by the job and garbage
// collected with it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=alloc
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.spec.job.name`
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.spec.queue`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Preemptions",type=integer,JSONPath=`.status.preemptions`
// +kubebuilder:printcolumn:name="Resizes",type=integer,JSONPath=`.status.resizes`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Allocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AllocationSpec   `json:"spec"`
	Status AllocationStatus `json:"status,omitempty"`
}

// AllocationList is a list of Allocations.
//
// +kubebuilder:object:root=true
type AllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Allocation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Allocation{}, &AllocationList{})
}
