// Package metrics defines the operator's Prometheus metrics (docs/operator.md and docs/simulator.md)
// and registers them with controller-runtime's registry, which the manager serves on its
// metrics endpoint: queue length per queue, admission latency and waiting time, preemptions
// by mode and reason, checkpoint-handshake duration and outcome, GPUs allocated and free,
// prediction error, and scheduling-cycle duration and rejected decisions.
package metrics
