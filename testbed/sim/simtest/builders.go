package simtest

import (
	"time"

	"github.com/pickyman/pickyman/traces"
)

// TraceJobWrapper builds a traces.Job.
type TraceJobWrapper struct{ traces.Job }

// MakeTraceJob returns a one-GPU, one-epoch job of 60 s submitted at 0.
func MakeTraceJob(id string) *TraceJobWrapper {
	return &TraceJobWrapper{traces.Job{ID: id, Duration: time.Minute, GPUs: 1, Workers: 1, GPUsPerWorker: 1, Epochs: 1}}
}

// Submit sets the submit offset.
func (w *TraceJobWrapper) Submit(d time.Duration) *TraceJobWrapper { w.Job.Submit = d; return w }

// Duration sets the service time.
func (w *TraceJobWrapper) Duration(d time.Duration) *TraceJobWrapper { w.Job.Duration = d; return w }

// Gang sets workers x GPUs per worker.
func (w *TraceJobWrapper) Gang(workers, perWorker int32) *TraceJobWrapper {
	w.Workers, w.GPUsPerWorker, w.GPUs = workers, perWorker, workers*perWorker
	return w
}

// Epochs sets the epoch count.
func (w *TraceJobWrapper) Epochs(n int32) *TraceJobWrapper { w.Job.Epochs = n; return w }

// Checkpoint sets the checkpoint size.
func (w *TraceJobWrapper) Checkpoint(bytes int64) *TraceJobWrapper {
	w.CheckpointBytes = bytes
	return w
}

// Dataset sets the dataset size.
func (w *TraceJobWrapper) Dataset(bytes int64) *TraceJobWrapper { w.DatasetBytes = bytes; return w }

// Priority sets the priority.
func (w *TraceJobWrapper) Priority(p int32) *TraceJobWrapper { w.Job.Priority = p; return w }

// Model sets the model name.
func (w *TraceJobWrapper) Model(m string) *TraceJobWrapper { w.Job.Model = m; return w }

// Obj returns the job.
func (w *TraceJobWrapper) Obj() traces.Job { return w.Job }

// Cluster returns a cluster of nodes nodes with gpus GPUs each.
func Cluster(nodes int, gpus int32) traces.Cluster {
	return traces.Cluster{Pools: []traces.NodePool{{Count: nodes, GPUs: gpus}}, Source: "test"}
}
