// Package api serves the agent's local API to training processes (docs/agent.md; the wire
// protocol is described in package protocol): a Unix socket, line-delimited JSON, one
// connection per rank.
//
// Registry holds the state of every training pod on the node: its ranks, their epochs, the
// checkpoint request the operator made and the reports the ranks gave. The socket server
// (Server) turns lines into Registry calls; the coordinator (package coord) feeds the
// registry from pod annotations and receives acknowledgements and progress through Hooks.
// Every call is validated against the pod's state before anything changes, so a malformed or
// out-of-order call changes nothing.
//
// A caller's pod is the pod of the socket peer's process (SO_PEERCRED pid, then
// /proc/<pid>/cgroup, through the PodResolver interface), never a name in the payload.
package api
