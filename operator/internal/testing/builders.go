package testing

import (
	"sort"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Epoch is the time origin builders use when a test does not care about absolute time.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// At returns Epoch plus d.
func At(d time.Duration) time.Time { return Epoch.Add(d) }

// JobWrapper builds a sched.Job.
type JobWrapper struct{ sched.Job }

// MakeJob starts a queued job of one worker with one GPU, submitted at Epoch.
func MakeJob(id string) *JobWrapper {
	return &JobWrapper{sched.Job{ID: id, Phase: sched.Queued, Workers: 1, GPUsPerWorker: 1, Submit: Epoch}}
}

// Obj returns the job.
func (w *JobWrapper) Obj() *sched.Job { j := w.Job; return &j }

// GPUs sets the gang shape: workers workers of perWorker GPUs each.
func (w *JobWrapper) GPUs(workers, perWorker int32) *JobWrapper {
	w.Workers, w.GPUsPerWorker = workers, perWorker
	return w
}

// Elastic makes the job elastic between lo and hi workers.
func (w *JobWrapper) Elastic(lo, hi int32) *JobWrapper {
	w.MinWorkers, w.MaxWorkers = lo, hi
	return w
}

// Priority sets the priority.
func (w *JobWrapper) Priority(p int32) *JobWrapper { w.Job.Priority = p; return w }

// Queue sets the queue name.
func (w *JobWrapper) Queue(q string) *JobWrapper { w.Job.Queue = q; return w }

// Model sets the network model name.
func (w *JobWrapper) Model(m string) *JobWrapper { w.Job.Model = m; return w }

// GPUModel sets the GPU model the job requires.
func (w *JobWrapper) GPUModel(m string) *JobWrapper { w.Job.GPUModel = m; return w }

// Submit sets the submit time.
func (w *JobWrapper) Submit(t time.Time) *JobWrapper { w.Job.Submit = t; return w }

// Started sets the first and last admission times.
func (w *JobWrapper) Started(t time.Time) *JobWrapper {
	if w.FirstStart.IsZero() {
		w.FirstStart = t
	}
	w.LastStart = t
	return w
}

// LastStop sets when the job last gave its GPUs back.
func (w *JobWrapper) LastStop(t time.Time) *JobWrapper { w.Job.LastStop = t; return w }

// Attained sets the GPU service received so far.
func (w *JobWrapper) Attained(d time.Duration) *JobWrapper { w.Job.Attained = d; return w }

// Estimate sets the run time the user declared.
func (w *JobWrapper) Estimate(d time.Duration) *JobWrapper { w.UserEstimate = d; return w }

// Oracle sets the true service time and remaining time.
func (w *JobWrapper) Oracle(service, remaining time.Duration) *JobWrapper {
	w.Job.Oracle = sched.Oracle{Known: true, Service: service, Remaining: remaining}
	return w
}

// Placement builds a placement of this job's shape from node names, one name per worker;
// a name repeated means several workers on that node.
func (w *JobWrapper) Placement(nodes ...string) []sched.Slot {
	var out []sched.Slot
	for _, n := range nodes {
		found := false
		for i := range out {
			if out[i].Node == n {
				out[i].Workers++
				out[i].GPUs += w.GPUsPerWorker
				found = true
				break
			}
		}
		if !found {
			out = append(out, sched.Slot{Node: n, Workers: 1, GPUs: w.GPUsPerWorker})
		}
	}
	return out
}

// Running makes the job Running on the named nodes (see Placement). Set GPUs first.
func (w *JobWrapper) Running(nodes ...string) *JobWrapper {
	w.Phase = sched.Running
	w.Job.Placement = w.Placement(nodes...)
	return w
}

// Suspending makes the job Suspending in mode, freeing its GPUs for job forID ("" for
// none), on the named nodes.
func (w *JobWrapper) Suspending(mode sched.SuspendMode, forID string, nodes ...string) *JobWrapper {
	w.Phase = sched.Suspending
	w.Job.Placement = w.Placement(nodes...)
	w.Suspend = &sched.SuspendState{Mode: mode, For: forID}
	return w
}

// Reserved gives the queued job a reservation on the named nodes.
func (w *JobWrapper) Reserved(nodes ...string) *JobWrapper {
	w.Job.Reserved = w.Placement(nodes...)
	return w
}

// NodeWrapper builds a sched.Node.
type NodeWrapper struct{ sched.Node }

// MakeNode starts a schedulable node with gpus GPUs of no particular model.
func MakeNode(name string, gpus int32) *NodeWrapper {
	return &NodeWrapper{sched.Node{Name: name, GPUs: gpus}}
}

// Model sets the GPU model.
func (w *NodeWrapper) Model(m string) *NodeWrapper { w.GPUModel = m; return w }

// Unschedulable marks the node unschedulable.
func (w *NodeWrapper) Unschedulable() *NodeWrapper { w.Node.Unschedulable = true; return w }

// Used sets the used GPUs explicitly (MakeSnapshot otherwise derives them from the jobs).
func (w *NodeWrapper) Used(n int32) *NodeWrapper { w.Node.Used = n; return w }

// Obj returns the node.
func (w *NodeWrapper) Obj() sched.Node { return w.Node }

// SnapshotWrapper builds a sched.Snapshot.
type SnapshotWrapper struct {
	s        sched.Snapshot
	explicit bool
}

// MakeSnapshot starts a snapshot at time now.
func MakeSnapshot(now time.Time) *SnapshotWrapper {
	return &SnapshotWrapper{s: sched.Snapshot{Now: now}}
}

// Nodes adds nodes.
func (w *SnapshotWrapper) Nodes(nodes ...sched.Node) *SnapshotWrapper {
	w.s.Nodes = append(w.s.Nodes, nodes...)
	return w
}

// Jobs adds jobs.
func (w *SnapshotWrapper) Jobs(jobs ...*sched.Job) *SnapshotWrapper {
	w.s.Jobs = append(w.s.Jobs, jobs...)
	return w
}

// KeepUsed keeps the nodes' Used as given instead of deriving it from the jobs.
func (w *SnapshotWrapper) KeepUsed() *SnapshotWrapper { w.explicit = true; return w }

// Obj returns the snapshot: nodes sorted by name, and each node's Used set to the GPUs
// of the running and suspending jobs placed on it (unless KeepUsed).
func (w *SnapshotWrapper) Obj() *sched.Snapshot {
	s := w.s
	s.Nodes = append([]sched.Node(nil), s.Nodes...)
	s.Jobs = append([]*sched.Job(nil), s.Jobs...)
	sort.Slice(s.Nodes, func(a, b int) bool { return s.Nodes[a].Name < s.Nodes[b].Name })
	if !w.explicit {
		at := make(map[string]int, len(s.Nodes))
		for i := range s.Nodes {
			s.Nodes[i].Used = 0
			at[s.Nodes[i].Name] = i
		}
		for _, j := range s.Jobs {
			if j.Phase != sched.Running && j.Phase != sched.Suspending {
				continue
			}
			for _, sl := range j.Placement {
				if i, ok := at[sl.Node]; ok {
					s.Nodes[i].Used += sl.GPUs
				}
			}
		}
	}
	return &s
}
