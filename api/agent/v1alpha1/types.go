package v1alpha1

import (
	"fmt"
	"time"
)

// Environment and socket.
const (
	// EnvSocket names the environment variable that holds the socket path in a training pod.
	EnvSocket = "PICKYMAN_AGENT_SOCKET"
	// EnvAgentUID names the environment variable that holds the uid the agent runs as; the
	// client refuses a socket whose listener runs as another uid (its peer credentials).
	EnvAgentUID = "PICKYMAN_AGENT_UID"
	// AgentUID is the uid the DaemonSet runs the agent as (config/agent/daemonset.yaml).
	AgentUID = 65532
	// SocketName is the socket's file name inside the host socket directory.
	SocketName = "agent.sock"
	// DefaultSocketDir is the host directory the DaemonSet shares with training pods.
	DefaultSocketDir = "/var/run/pickyman"
)

// Exit codes of a training process that uses the client.
const (
	// ExitDone: the training finished all its epochs.
	ExitDone = 0
	// ExitSuspended: the process wrote a checkpoint because the agent asked, acknowledged it
	// and exited (128 + SIGTERM, what a container runtime reports for a terminated process).
	ExitSuspended = 143
)

// Pod annotations (see the package doc).
const (
	AnnotationCheckpointRequest = "pickyman.dev/checkpoint-request"
	AnnotationCheckpointAck     = "pickyman.dev/checkpoint-ack"
	AnnotationResumeFrom        = "pickyman.dev/resume-from"
	AnnotationProgress          = "pickyman.dev/progress"
)

// ProgressInterval bounds how often the agent patches AnnotationProgress between epoch ends.
const ProgressInterval = 10 * time.Second

// Mode says how a training process should stop for a checkpoint request.
type Mode string

const (
	// ModeBoundary: finish the current epoch, write a checkpoint, exit.
	ModeBoundary Mode = "boundary"
	// ModeNow: write a checkpoint at the next step; the partial epoch is lost.
	ModeNow Mode = "now"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == ModeBoundary || m == ModeNow }

// CheckpointRequest is the value of AnnotationCheckpointRequest.
type CheckpointRequest struct {
	ID       string    `json:"id"`
	Mode     Mode      `json:"mode"`
	Deadline time.Time `json:"deadline,omitzero"`
}

// CheckpointAck is the value of AnnotationCheckpointAck.
type CheckpointAck struct {
	RequestID string `json:"requestId"`
	// Epoch is the epoch to resume from (the number of epochs the checkpoint holds).
	Epoch   int32   `json:"epoch"`
	Path    string  `json:"path"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// SuspendSeconds is the delay from the agent seeing the request to the acknowledgement.
	SuspendSeconds float64   `json:"suspendSeconds"`
	Time           time.Time `json:"time"`
}

// ResumePoint is the value of AnnotationResumeFrom and the answer to register/resume_point.
type ResumePoint struct {
	Epoch int32  `json:"epoch"`
	Path  string `json:"path,omitempty"`
	// WorldSize is the number of workers (pods) of this admission, ReferenceWorldSize the
	// size the job's epoch time and learning-rate schedule refer to (the job's
	// pickyman.dev/elastic-reference annotation, by default its maximum size). They differ when an elastic job resumes or was resized to another size;
	// 0 when the operator did not say (a rigid job: the size never changes).
	WorldSize          int32 `json:"worldSize,omitempty"`
	ReferenceWorldSize int32 `json:"referenceWorldSize,omitempty"`
}

// Progress is the value of AnnotationProgress.
type Progress struct {
	// Epoch is the epoch in progress (or last begun); EpochsDone counts completed epochs.
	Epoch      int32 `json:"epoch"`
	EpochsDone int32 `json:"epochsDone"`
	// EpochStart is when the epoch in progress began (zero between epochs); with
	// EpochSeconds it gives the phase f of the overhead model (docs/overhead.md).
	EpochStart time.Time `json:"epochStart,omitzero"`
	// EpochSeconds is the duration of the last completed epoch, 0 if none.
	EpochSeconds float64 `json:"epochSeconds,omitempty"`
	// ReadBytes is the storage bytes received since the pod started; ReadRate is the
	// smoothed rate in bytes per second.
	ReadBytes int64     `json:"readBytes"`
	ReadRate  float64   `json:"readRate"`
	Time      time.Time `json:"time"`
}

// Bounds of the values an agent reports. A value outside them is not a measurement: the
// operator ignores a report that holds one (docs/security.md, forged annotations).
const (
	// MaxEpochs bounds an epoch count (Epoch, EpochsDone, CheckpointAck.Epoch).
	MaxEpochs = 1 << 20
	// MaxEpochSeconds bounds an epoch's duration: 30 days.
	MaxEpochSeconds = 30 * 24 * 3600
	// MaxReadRate bounds a pod's storage read rate: 1 TB/s, beyond any node's network.
	MaxReadRate = 1e12
	// MaxCheckpointSeconds bounds a checkpoint write or a suspend delay: 1 day.
	MaxCheckpointSeconds = 24 * 3600
)

// Validate reports the first field of p outside its bounds: epochs in [0, MaxEpochs], an
// epoch time finite in [0, MaxEpochSeconds], read bytes non-negative, a read rate finite in
// [0, MaxReadRate].
func (p Progress) Validate() error {
	switch {
	case p.Epoch < 0 || p.Epoch > MaxEpochs:
		return fmt.Errorf("epoch %d outside [0, %d]", p.Epoch, MaxEpochs)
	case p.EpochsDone < 0 || p.EpochsDone > MaxEpochs:
		return fmt.Errorf("epochsDone %d outside [0, %d]", p.EpochsDone, MaxEpochs)
	case !inRange(p.EpochSeconds, MaxEpochSeconds):
		return fmt.Errorf("epochSeconds %v outside [0, %d]", p.EpochSeconds, MaxEpochSeconds)
	case p.ReadBytes < 0:
		return fmt.Errorf("readBytes %d is negative", p.ReadBytes)
	case !inRange(p.ReadRate, MaxReadRate):
		return fmt.Errorf("readRate %v outside [0, %g]", p.ReadRate, float64(MaxReadRate))
	}
	return nil
}

// Validate reports the first field of a outside its bounds: a request id, an epoch in
// [0, MaxEpochs], non-negative bytes, finite durations in [0, MaxCheckpointSeconds].
func (a CheckpointAck) Validate() error {
	switch {
	case a.RequestID == "":
		return fmt.Errorf("requestId is empty")
	case a.Epoch < 0 || a.Epoch > MaxEpochs:
		return fmt.Errorf("epoch %d outside [0, %d]", a.Epoch, MaxEpochs)
	case a.Bytes < 0:
		return fmt.Errorf("bytes %d is negative", a.Bytes)
	case !inRange(a.Seconds, MaxCheckpointSeconds):
		return fmt.Errorf("seconds %v outside [0, %d]", a.Seconds, MaxCheckpointSeconds)
	case !inRange(a.SuspendSeconds, MaxCheckpointSeconds):
		return fmt.Errorf("suspendSeconds %v outside [0, %d]", a.SuspendSeconds, MaxCheckpointSeconds)
	}
	return nil
}

// inRange reports whether v is a finite number in [0, hi] (NaN is not).
func inRange(v, hi float64) bool { return v >= 0 && v <= hi }
