package v1alpha1

// Labels and annotations that training jobs carry.
const (
	// LabelQueue names the PickyMan queue of a job; jobs without it are left alone.
	LabelQueue = "pickyman.dev/queue"
	// LabelModel names the model a job trains; it keys the ModelProfile.
	LabelModel = "pickyman.dev/model"
	// AnnotationEpochs is the job's number of epochs.
	AnnotationEpochs = "pickyman.dev/epochs"
	// AnnotationDatasetBytes is the bytes the job reads per epoch.
	AnnotationDatasetBytes = "pickyman.dev/dataset-bytes"
	// AnnotationCheckpointBytes is the size of one checkpoint.
	AnnotationCheckpointBytes = "pickyman.dev/checkpoint-bytes"
	// AnnotationEstimate is the user's run-time estimate as a Go duration ("2h30m").
	AnnotationEstimate = "pickyman.dev/estimate"
	// AnnotationElasticReference is, on an elastic job, the count of its elastic pod set that
	// its epoch time and learning-rate schedule refer to (default: the maximum).
	AnnotationElasticReference = "pickyman.dev/elastic-reference"
	// LabelAllocation on a pod names the Allocation of its job.
	LabelAllocation = "pickyman.dev/allocation"
)

// SchedulerName is the schedulerName of the pods of managed jobs: kube-scheduler leaves them
// alone, and the operator's binder binds each pod to the node its gang placement chose.
const SchedulerName = "pickyman"
