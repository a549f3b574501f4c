package allocation

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// PodProgress is what the agents reported for a job's pods.
type PodProgress struct {
	// Pods is the number of the job's pods that exist.
	Pods       int
	EpochsDone int32
	EpochTime  time.Duration
	// EpochStart is when the gang's epoch in progress began (the earliest start its pods
	// report; the agent's clock), zero between epochs or if no pod says.
	EpochStart time.Time
	// ReadBytes and ReadRate sum the pods' storage reads since they started and their
	// smoothed read rates.
	ReadBytes int64
	ReadRate  float64
	// Time is when the newest of the reports that carry a read rate was taken (the agent's
	// clock), zero if none does.
	Time time.Time
}

// ReadProgress folds the progress annotations of a job's pods: the least epochs done (the
// gang advances together) and the longest epoch time. A report that does not parse or holds
// a value outside the contract's bounds (agentv1alpha1.Progress.Validate) is ignored, as if
// the pod had not reported.
func ReadProgress(pods []*corev1.Pod) PodProgress {
	p := PodProgress{Pods: len(pods)}
	first := true
	for _, pod := range pods {
		v, ok := pod.Annotations[agentv1alpha1.AnnotationProgress]
		if !ok {
			continue
		}
		var pr agentv1alpha1.Progress
		if json.Unmarshal([]byte(v), &pr) != nil || pr.Validate() != nil {
			continue
		}
		if first || pr.EpochsDone < p.EpochsDone {
			p.EpochsDone = pr.EpochsDone
		}
		first = false
		if d := time.Duration(pr.EpochSeconds * float64(time.Second)); d > p.EpochTime {
			p.EpochTime = d
		}
		if !pr.EpochStart.IsZero() && (p.EpochStart.IsZero() || pr.EpochStart.Before(p.EpochStart)) {
			p.EpochStart = pr.EpochStart
		}
		p.ReadRate += pr.ReadRate
		p.ReadBytes += pr.ReadBytes
		if pr.ReadRate > 0 && pr.Time.After(p.Time) {
			p.Time = pr.Time
		}
	}
	return p
}

// SchedJob converts an Allocation into the scheduling core's view of its job. It returns
// nil for a finished Allocation or one without a usable gang.
func SchedJob(a *v1alpha1.Allocation, prog PodProgress, now time.Time) *sched.Job {
	j := &sched.Job{}
	if !FillSchedJob(j, JobID(a), a, prog, now) {
		return nil
	}
	return j
}

// FillSchedJob is SchedJob into j, a zero Job, with the job's ID given (JobID(a)): a caller
// that converts many Allocations at once can hold their jobs in one slice. It reports
// whether the Allocation is a job (SchedJob is not nil).
func FillSchedJob(j *sched.Job, id string, a *v1alpha1.Allocation, prog PodProgress, now time.Time) bool {
	workers, per, model, err := jobframework.GangShape(a.Spec.PodSets)
	if err != nil || workers == 0 {
		return false
	}
	st := &a.Status
	*j = sched.Job{
		ID:              id,
		Queue:           a.Spec.Queue,
		Priority:        a.Spec.Priority,
		Model:           a.Spec.Model,
		Workers:         workers,
		GPUsPerWorker:   per,
		GPUModel:        model,
		Submit:          a.CreationTimestamp.Time,
		Preemptions:     st.Preemptions,
		Attained:        time.Duration(st.AttainedGPUSeconds) * time.Second,
		Epochs:          a.Spec.Epochs,
		EpochsDone:      epochsDone(a, prog),
		EpochTime:       prog.EpochTime,
		DatasetBytes:    a.Spec.DatasetBytes,
		CheckpointBytes: a.Spec.CheckpointBytes,
		UserEstimate:    time.Duration(a.Spec.EstimateSeconds) * time.Second,
	}
	if lo, hi, ok := jobframework.ElasticBounds(a); ok {
		j.MinWorkers, j.MaxWorkers = lo, hi
	}
	if st.FirstAdmitted != nil {
		j.FirstStart = st.FirstAdmitted.Time
	}
	if st.LastAdmitted != nil {
		j.LastStart = st.LastAdmitted.Time
	}
	if st.LastStopped != nil {
		j.LastStop = st.LastStopped.Time
	}
	switch st.Phase {
	case v1alpha1.AllocationAdmitted:
		j.Phase = sched.Running
		j.Placement = ToSlots(st.Placement)
		if !j.LastStart.IsZero() && now.After(j.LastStart) {
			j.Attained += time.Duration(int64(now.Sub(j.LastStart)) * int64(j.GPUs()))
		}
		j.SinceCheckpoint = sinceCheckpoint(prog, j.LastStart, now)
	case v1alpha1.AllocationPreempting, v1alpha1.AllocationSuspended:
		j.Phase = sched.Suspending
		j.Placement = ToSlots(st.Placement)
		j.Suspend = &sched.SuspendState{Mode: sched.SuspendNow}
		if c := st.Checkpoint; c != nil {
			j.Suspend = &sched.SuspendState{Mode: sched.SuspendMode(c.Mode), For: c.For, Decided: c.Requested.Time, FreeAt: c.Deadline.Time}
			if len(c.Resize) > 0 {
				j.Suspend.Resize = ToSlots(c.Resize)
			}
		}
	case v1alpha1.AllocationFinished:
		return false
	default:
		j.Phase = sched.Queued
		if len(st.Reserved) > 0 {
			j.Reserved = ToSlots(st.Reserved)
		}
	}
	return true
}

// sinceCheckpoint is a running job's work since its last checkpoint, which a suspend now
// loses: the time into the epoch its pods report in progress (a job checkpoints at its epoch
// boundaries and resumes from the last). Zero between epochs, for a report older than the
// job's last start (pods of an earlier run) or one from an agent whose clock is ahead; past
// a whole epoch time, a boundary has passed that no report has shown yet, and the time into
// the epoch after it is what counts.
func sinceCheckpoint(prog PodProgress, lastStart, now time.Time) time.Duration {
	if prog.EpochStart.IsZero() || prog.EpochStart.Before(lastStart) || !now.After(prog.EpochStart) {
		return 0
	}
	d := now.Sub(prog.EpochStart)
	if prog.EpochTime > 0 && d >= prog.EpochTime {
		d %= prog.EpochTime
	}
	return d
}

// epochsDone is the epochs an Allocation's job has completed: the most of what its status
// records and its pods report, within the job's own epochs.
func epochsDone(a *v1alpha1.Allocation, prog PodProgress) int32 {
	return WithinEpochs(a, max(a.Status.EpochsDone, a.Status.ResumeEpoch, prog.EpochsDone))
}

// WithinEpochs bounds an epoch count that pods reported to the job's own epochs, if known:
// a count beyond them would make an unfinished job look finishing, and so never a victim.
func WithinEpochs(a *v1alpha1.Allocation, epochs int32) int32 {
	if a.Spec.Epochs > 0 {
		return min(epochs, a.Spec.Epochs)
	}
	return epochs
}
