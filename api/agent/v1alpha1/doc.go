// Package v1alpha1 is the contract between the operator and the node agent: the pod
// annotations through which they coordinate a checkpoint and a resume, their JSON values, the
// socket directory the agent shares with training pods and the exit codes of a training
// process. It imports nothing of the project, so that every party can import it; the agent's
// local socket API (agent/pkg/protocol) builds on it. docs/agent.md describes the protocol.
//
// # Parties
//
//   - The operator decides to suspend (preempt) or resume a job. It talks to agents only
//     through the Kubernetes API server: every piece of coordination state is an annotation on
//     a pod, so it survives restarts of the agent and of the operator.
//   - The agent runs once per node (a DaemonSet). It acts only for pods whose spec.nodeName is
//     its node (its watch uses a field selector), serves the local socket API to the training
//     processes of those pods, and writes acknowledgements and progress back to their pods.
//   - The training process (one per rank) calls the local API through the Python client
//     (agent/python/pickyman_agent).
//
// # Pod annotations (API server)
//
// AnnotationCheckpointRequest (operator -> agent) holds a JSON CheckpointRequest: a request
// id, the mode (boundary: finish the current epoch, write a checkpoint, exit; now: write a
// checkpoint at the next step, exit) and a deadline. The operator sets it on every pod of the
// victim job. Setting the same id again is a no-op; a new id is a new request.
//
// AnnotationCheckpointAck (agent -> operator) holds a JSON CheckpointAck: the request id it
// answers, the epoch the checkpoint resumes from, the checkpoint path, its size in bytes and
// the seconds it took to write, and the measured suspend delay (request seen to acknowledgement).
// The agent writes it once every rank of the pod that registered has reported its checkpoint.
// The operator waits for an acknowledgement from every pod of the job (or the deadline), then
// sets runPolicy.suspend: true. An acknowledgement whose id differs from the current request is
// stale and must be ignored.
//
// AnnotationResumeFrom (operator -> agent) holds a JSON ResumePoint: the epoch to start from
// and the checkpoint path, and for an elastic job the admission's world size and the reference
// size its epoch time refers to (both omitted, so 0, for a rigid job). The operator puts it on
// the job's pod templates before it admits the job again (so every new pod carries it), or on
// the pods themselves. A pod without it starts from epoch 0. The agent answers register and
// resume_point with it unchanged.
//
// AnnotationProgress (agent -> operator) holds a JSON Progress: the epoch in progress and
// when it began, the epochs completed, the last epoch's duration, the storage bytes read and
// the smoothed read rate. The
// agent refreshes it at every epoch end and at most every ProgressInterval otherwise; the
// PickyMan predictor consumes it (docs/policy.md, "Prediction").
//
// After checkpoint_done for a suspend request (agent/pkg/protocol) the training process
// exits with ExitSuspended; a finished training exits with ExitDone.
package v1alpha1
