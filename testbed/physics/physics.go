// Package physics is the cost model of the testbed's simulated training, one for the
// simulator (testbed/sim) and the testbed agent (testbed/agentsim).
package physics

import (
	"math"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/profile"
)

// Physics is the cost model of docs/simulator.md ("Physics"): what starting, suspending
// and resuming a job costs, and how an elastic job's speed depends on its size. The
// simulator (testbed/sim) and the testbed agent (testbed/agentsim) both run it; the testbed
// agent ignores Grace and Ideal (a simulated pod's container stops when the kwok stages say).
type Physics struct {
	// ContainerStart is the time from admission until the training process runs
	// (default 20 s).
	ContainerStart time.Duration
	// WarmUp is the data-pipeline and framework warm-up before the first step (default
	// 30 s).
	WarmUp time.Duration
	// Grace is the termination grace period of a suspend-now: SIGTERM, then kill (default
	// 30 s).
	Grace time.Duration
	// WriteBandwidth and ReadBandwidth are the checkpoint storage bandwidths in bytes per
	// second (defaults 500 MB/s and 1 GB/s).
	WriteBandwidth float64
	ReadBandwidth  float64
	// CheckpointPeriod is how many epochs pass between periodic checkpoints (default 1).
	// Periodic checkpoints are written asynchronously and cost no time; the checkpoint of a
	// boundary suspend is written synchronously and holds the GPUs.
	CheckpointPeriod int32
	// NoiseSigma is the sigma of the per-job lognormal noise (median 1) on start, warm-up,
	// checkpoint write and load times and on read traffic; 0 disables noise (default 0.1).
	NoiseSigma float64
	// Ideal makes preemption free, as most research simulators assume: suspends are
	// instant and lose nothing, and starts and resumes cost nothing.
	Ideal bool
	// Serial is the serial fraction of an elastic job's epoch time, the a of the model
	// profile's fit t(G) = a + b/G relative to the time at the job's requested GPUs G0:
	// t(G) = t(G0) x (Serial + (1 - Serial) x G0 / G), Amdahl's law (default 0.1). It sets
	// how much an elastic job slows when it shrinks and gains when it grows.
	Serial float64
	// StartDelay and FinishDelay are the control plane's latency around a job's run, which
	// a cluster has and the training itself does not: from a start or resume decision until
	// the job's containers start (the Allocation write, the job's unsuspend, pod creation,
	// binding, the kubelet or kwok), and from the end of training until the scheduler sees
	// the job finished and its GPUs free. The job holds its GPUs through both. Zero by
	// default; a replay's comparison sets them to its cluster's (testbed/replay).
	StartDelay, FinishDelay time.Duration
	// SuspendDelay is the control plane's latency around a suspend, beyond its physics (the
	// grace period, the run to the epoch's end and the checkpoint write): the Allocation
	// write, the checkpoint request on the pods, the agent's acknowledgement, the job's
	// suspend and its pods' deletion. The job holds its GPUs through it (SuspendWait); its
	// progress stops as the physics says. Zero by default; a replay's comparison sets it to
	// its cluster's.
	SuspendDelay time.Duration
}

// Default returns the documented defaults.
func Default() Physics {
	return Physics{
		ContainerStart:   20 * time.Second,
		WarmUp:           30 * time.Second,
		Grace:            30 * time.Second,
		WriteBandwidth:   500e6,
		ReadBandwidth:    1e9,
		CheckpointPeriod: 1,
		NoiseSigma:       0.1,
		Serial:           0.1,
	}
}

// Speed is the rate of progress on workers workers relative to base, the size the job's
// epoch time refers to: 1 / profile.Amdahl(serial, base, workers); 1 when either is unknown.
func Speed(workers, base int32, serial float64) float64 {
	if workers == base || base <= 0 || workers <= 0 {
		return 1
	}
	return 1 / profile.Amdahl(serial, base, workers)
}

// EpochTime is the epoch time of a job on worldSize workers, given its epoch time epoch at
// reference workers: epoch x profile.Amdahl(Serial, reference, worldSize), so an elastic job
// that shrinks to half its reference size takes 1 + (1 - Serial) times as long per epoch
// (1.9x with Serial 0.1). When either size is 0 (a rigid job) or they are equal, epoch is
// unchanged.
func (ph Physics) EpochTime(epoch time.Duration, worldSize, reference int32) time.Duration {
	if worldSize <= 0 || reference <= 0 || worldSize == reference {
		return epoch
	}
	return time.Duration(math.Round(float64(epoch) * profile.Amdahl(ph.Serial, reference, worldSize)))
}
