// Package scheduler runs the operator's scheduling cycle (docs/operator.md), a
// leader-elected runnable: the snapshot (nodes and pods from the cache, Allocations from the
// API server), the configured policy, sched.Validate, and act, which writes the decisions
// into Allocations (reservations, then preemptions, then starts, each guarded by the
// Allocation's resourceVersion) and nothing else. The reconcilers of package controller
// carry an Allocation's new state into its job and pods, and reach the scheduler only
// through its Inbox (events for a learning policy, requests for a cycle).
package scheduler
