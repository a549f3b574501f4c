package traces

import (
	"time"
)

// Field names a field of Job that a trace may lack and that may be synthesized.
type Field uint16

const (
	FieldModel Field = 1 << iota
	FieldEpochs
	FieldEpochTime
	FieldDatasetBytes
	FieldCheckpointBytes
	FieldWorkers
	FieldPriority
	FieldGPUModel
)

// FieldSet is a set of Fields.
type FieldSet uint16

// Has reports whether f is in the set.
func (s FieldSet) Has(f Field) bool { return s&FieldSet(f) != 0 }

// Job is one job of a trace, normalized across formats.
type Job struct {
	// ID is unique within the trace.
	ID string
	// Submit is the arrival time as an offset from the trace's start.
	Submit time.Duration
	// Duration is the job's true service time (run time at its allocation, no queueing).
	Duration time.Duration
	// GPUs is the total GPU demand; Workers*GPUsPerWorker == GPUs.
	GPUs          int32
	Workers       int32
	GPUsPerWorker int32
	// GPUModel is the GPU model the job asked for, "" for any.
	GPUModel string
	User     string
	// Queue is the virtual cluster or queue the job was submitted to.
	Queue string
	// Priority is larger for more important jobs; PriorityClass is its name.
	Priority      int32
	PriorityClass string
	// Status is the trace's final status (for example Pass, Killed, COMPLETED), "" if none.
	Status string

	Model           string
	Epochs          int32
	EpochTime       time.Duration
	DatasetBytes    int64
	CheckpointBytes int64

	// Synthesized lists the fields that were not in the trace.
	Synthesized FieldSet
	// Line is the 1-based line (or record index) the job came from.
	Line int
}
