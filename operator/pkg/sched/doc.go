// Package sched is PickyMan's scheduling core: the cluster snapshot, job states, gang
// placement and the Policy interface (docs/simulator.md and docs/policy.md).
//
// A policy is a pure function of a Snapshot that returns Decisions. The operator builds a
// snapshot from its informers and carries the decisions out through the API server; the
// testbed simulator builds the same snapshot from its event state and carries them out with
// its physics model. Both call the same policy code, so a policy measured in simulation is
// the policy that runs on the cluster.
package sched
