package v1alpha1

import "time"

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
