// Package app wires the node agent from its flags: the GPU backend, the Kubernetes client,
// the registry, coordinator and socket server, the metrics endpoint, and testbed mode. The
// command (agent/cmd/pickyman-agent) only calls Main.
package app
