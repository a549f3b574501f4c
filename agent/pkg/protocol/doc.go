// Package protocol holds the constants and wire types that the node agent, the training
// processes and the operator share. It implements the coordination protocol of the design
// brief, sections 4 and 5, and has no dependencies so that every party can import it.
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
// PickyMan predictor consumes it (brief section 4, "Prediction").
//
// # Local API (agent <-> training process)
//
// The agent listens on a Unix stream socket, SocketName inside a host directory that is
// mounted into training pods; the path reaches the training process in the environment
// variable EnvSocket. The wire format is line-delimited JSON: the client writes one Request
// per line and reads exactly one Response per line, in order, on the same connection. A
// connection is one rank's session: its first call must be OpRegister, which binds the
// connection to (pod, rank, world size).
//
// The caller's identity is never taken from the payload: the agent reads the peer's pid from
// the socket (SO_PEERCRED), maps it to a pod UID through /proc/<pid>/cgroup, and rejects a
// register whose pod does not match, or a pod that is not on the agent's node. The pod field
// of register is optional; when given it must name the caller's pod. A malformed or
// out-of-order call gets Response{OK: false, Error: ...} with an ErrorCode and changes
// nothing; the connection stays usable.
//
// Calls, in the order a rank makes them:
//
//	register          {pod, rank, world_size}          -> resume point
//	epoch_begin       {epoch}                          (epoch >= resume epoch, increasing)
//	epoch_end         {epoch, samples, bytes}          (the epoch that began)
//	poll              {wait_ms}                        -> checkpoint request or none (waits up to wait_ms)
//	checkpoint_done   {request_id, epoch, path, bytes, seconds}
//	resume_point      {}                               -> resume point
//
// epoch_begin must name the resume epoch first, then the epoch after the last one ended.
// checkpoint_done names the epoch the checkpoint resumes from: for a boundary request it is
// reported between epochs and must be the next epoch; for a now request it may be any epoch
// from the resume point to the next one (the newest checkpoint the process has). Every rank
// of the pod reports; ranks that wrote nothing report 0 bytes. The agent acknowledges the pod
// when all its registered ranks have reported.
//
// After checkpoint_done for a suspend request the training process exits with
// ExitSuspended; a finished training exits with ExitDone.
package protocol
