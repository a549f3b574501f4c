package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProfileSample is one observation of a model's training at an allocation.
type ProfileSample struct {
	// GPUs is the job's total GPU allocation when the sample was taken.
	// +kubebuilder:validation:Minimum=1
	GPUs int32 `json:"gpus"`
	// EpochMillis is the observed time of one epoch at that allocation.
	// +kubebuilder:validation:Minimum=0
	EpochMillis int64 `json:"epochMillis"`
	// CheckpointMillis is the observed time to write one checkpoint, 0 if not observed.
	// +optional
	CheckpointMillis int64 `json:"checkpointMillis,omitempty"`
	// ResumeMillis is the observed time from admission to the first step after a resume,
	// 0 if not observed.
	// +optional
	ResumeMillis int64 `json:"resumeMillis,omitempty"`
	// Job is the namespace/name of the job the sample came from.
	// +optional
	Job string `json:"job,omitempty"`
	// Time is when the sample was taken.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// EpochTimeFit is the least-squares fit t(G) = A + B/G of epoch time against the GPU
// allocation G. Times are integer milliseconds, as the API conventions ask.
type EpochTimeFit struct {
	// AMillis is the allocation-independent part of the epoch time.
	AMillis int64 `json:"aMillis"`
	// BMillis is the part that shrinks with more GPUs, in GPU-milliseconds.
	BMillis int64 `json:"bMillis"`
	// Samples is the number of samples the fit was computed from.
	Samples int32 `json:"samples"`
	// ResidualPercent is the root-mean-square relative error of the fit over its samples,
	// in percent.
	ResidualPercent int32 `json:"residualPercent"`
	// Trusted reports whether the fit has enough samples (at least 4) and a residual small
	// enough for the predictor to use it.
	Trusted bool `json:"trusted"`
}

// OverheadParameters are the per-model parameters of the preemption-overhead model.
type OverheadParameters struct {
	// WriteBytesPerSecond is the checkpoint write bandwidth.
	// +optional
	WriteBytesPerSecond int64 `json:"writeBytesPerSecond,omitempty"`
	// ReadBytesPerSecond is the checkpoint read bandwidth.
	// +optional
	ReadBytesPerSecond int64 `json:"readBytesPerSecond,omitempty"`
	// StartMillis is the container start time.
	// +optional
	StartMillis int64 `json:"startMillis,omitempty"`
	// WarmupMillis is the data-pipeline warm-up after a (re)start.
	// +optional
	WarmupMillis int64 `json:"warmupMillis,omitempty"`
}

// ModelProfileSpec declares the model a profile describes.
type ModelProfileSpec struct {
	// Model is the model name that jobs carry in the pickyman.dev/model label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Model string `json:"model"`
	// DatasetBytes is the size of the model's dataset, read once per epoch; jobs may
	// override it with the pickyman.dev/dataset-bytes annotation.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DatasetBytes int64 `json:"datasetBytes,omitempty"`
	// CheckpointBytes is the size of one checkpoint.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CheckpointBytes int64 `json:"checkpointBytes,omitempty"`
}

// ModelProfileStatus is what the operator has learned about the model.
type ModelProfileStatus struct {
	// Samples are the most recent observations, oldest first, bounded in number.
	// +optional
	// +listType=atomic
	Samples []ProfileSample `json:"samples,omitempty"`
	// Fit is the current epoch-time fit.
	// +optional
	Fit *EpochTimeFit `json:"fit,omitempty"`
	// Overhead holds the learned overhead parameters.
	// +optional
	Overhead *OverheadParameters `json:"overhead,omitempty"`
	// PredictionErrorP50 is the median relative error of execution-time predictions
	// scored for finished jobs of this model.
	// +optional
	PredictionErrorP50 string `json:"predictionErrorP50,omitempty"`
	// Conditions: Trusted says whether the fit is used for predictions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ModelProfile is the profile database entry of one model: samples of its epoch time at
// several allocations, the fitted epoch-time curve, and the learned overhead parameters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mp
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Samples",type=integer,JSONPath=`.status.fit.samples`
// +kubebuilder:printcolumn:name="Trusted",type=boolean,JSONPath=`.status.fit.trusted`
// +kubebuilder:printcolumn:name="A(ms)",type=integer,JSONPath=`.status.fit.aMillis`,priority=1
// +kubebuilder:printcolumn:name="B(GPU-ms)",type=integer,JSONPath=`.status.fit.bMillis`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModelProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModelProfileSpec   `json:"spec"`
	Status ModelProfileStatus `json:"status,omitempty"`
}

// ModelProfileList is a list of ModelProfiles.
//
// +kubebuilder:object:root=true
type ModelProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ModelProfile{}, &ModelProfileList{})
}
