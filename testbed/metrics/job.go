package metrics

import "time"

// JobRecord is what happened to one job in a run. Times are offsets from the trace's start.
type JobRecord struct {
	ID   string
	GPUs int32
	// Submit, FirstStart and Finish are offsets from the trace's start; FirstStart and
	// Finish are meaningful only when the job was not rejected.
	Submit     time.Duration
	FirstStart time.Duration
	Finish     time.Duration
	// Service is the job's true run time at its allocation, without overhead.
	Service time.Duration
	// Held is the total time the job held GPUs (running, warming up, suspending).
	Held        time.Duration
	Preemptions int32
	// Resizes counts the shrinks and grows of an elastic job.
	Resizes int32
	// GPUTime is the GPU-time the job held (held time x GPUs held, per admission); 0 in
	// records that predate it, where Held x GPUs stands for it.
	GPUTime time.Duration
	// RedoneWork is work lost by suspend-now decisions (and done again).
	RedoneWork time.Duration
	// SuspendWait is time a preempted job held GPUs without progress that survives:
	// checkpoint writes of boundary suspends and grace periods of suspend-now.
	SuspendWait time.Duration
	// ResumeOverhead is container start + checkpoint load + warm-up after resumes.
	ResumeOverhead time.Duration
	// StartOverhead is container start + warm-up of the first start.
	StartOverhead time.Duration
	// SuspendDelay is the total time from preemption decisions to GPUs free.
	SuspendDelay time.Duration
	// Rejected jobs could never fit the cluster; RejectReason says why.
	Rejected     bool
	RejectReason string
}

// Queueing is the delay from submit to first start.
func (r *JobRecord) Queueing() time.Duration { return r.FirstStart - r.Submit }

// JCT is the job completion time: finish minus submit.
func (r *JobRecord) JCT() time.Duration { return r.Finish - r.Submit }

// Wait is all time the job did not hold GPUs before it completed: queueing plus time
// suspended. Resume warm-up counts as held time (it is in GPUSecondsLost instead).
func (r *JobRecord) Wait() time.Duration { return r.JCT() - r.Held }

// Lost is the time on each of the job's GPUs lost to preemption: redone work, suspend
// wait and resume overhead.
func (r *JobRecord) Lost() time.Duration { return r.RedoneWork + r.SuspendWait + r.ResumeOverhead }

// GPUSecondsLost is Lost times the job's GPUs, in seconds.
func (r *JobRecord) GPUSecondsLost() float64 { return r.Lost().Seconds() * float64(r.GPUs) }
