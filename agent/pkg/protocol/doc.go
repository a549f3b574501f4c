// Package protocol is the node agent's local API: the line-delimited JSON calls through which
// a training process (one per rank, through the Python client agent/python/pickyman_agent)
// coordinates with the agent on its node. The pod annotations and their values, which the
// agent shares with the operator, are in api/agent/v1alpha1.
//
// The agent listens on a Unix stream socket, agentv1alpha1.SocketName inside a host directory that is
// mounted into training pods; the path reaches the training process in the environment
// variable agentv1alpha1.EnvSocket. The wire format is line-delimited JSON: the client writes one Request
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
// agentv1alpha1.ExitSuspended; a finished training exits with agentv1alpha1.ExitDone.
package protocol
