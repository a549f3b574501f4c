package protocol

import (
	"time"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// Op names a local API call.
type Op string

const (
	OpRegister       Op = "register"
	OpEpochBegin     Op = "epoch_begin"
	OpEpochEnd       Op = "epoch_end"
	OpPoll           Op = "poll"
	OpCheckpointDone Op = "checkpoint_done"
	OpResumePoint    Op = "resume_point"
)

// MaxWait caps the wait of a poll call.
const MaxWait = 60 * time.Second

// MaxLine is the longest request line the agent accepts, in bytes.
const MaxLine = 64 << 10

// Request is one line from the training process. Fields not used by Op must be zero.
type Request struct {
	Op Op `json:"op"`
	// register
	Pod       string `json:"pod,omitempty"` // "namespace/name", optional: checked against the peer's pod
	Rank      int32  `json:"rank,omitempty"`
	WorldSize int32  `json:"world_size,omitempty"`
	// epoch_begin, epoch_end, checkpoint_done
	Epoch   int32 `json:"epoch,omitempty"`
	Samples int64 `json:"samples,omitempty"`
	Bytes   int64 `json:"bytes,omitempty"`
	// poll
	WaitMS int64 `json:"wait_ms,omitempty"`
	// checkpoint_done
	RequestID string  `json:"request_id,omitempty"`
	Path      string  `json:"path,omitempty"`
	Seconds   float64 `json:"seconds,omitempty"`
}

// ErrorCode classifies a failed call.
type ErrorCode string

const (
	ErrMalformed  ErrorCode = "malformed"    // not JSON, unknown op or field, bad value
	ErrOutOfOrder ErrorCode = "out_of_order" // valid call in the wrong state
	ErrForbidden  ErrorCode = "forbidden"    // the peer may not act for this pod
	ErrUnknownPod ErrorCode = "unknown_pod"  // the peer's pod is not on this node
)

// Response is one line from the agent.
type Response struct {
	OK    bool      `json:"ok"`
	Code  ErrorCode `json:"code,omitempty"`
	Error string    `json:"error,omitempty"`
	// register, resume_point
	Resume *agentv1alpha1.ResumePoint `json:"resume,omitempty"`
	// poll: the pending request, nil if none
	Checkpoint *agentv1alpha1.CheckpointRequest `json:"checkpoint,omitempty"`
}
