// Package controller holds the PickyMan operator's reconcilers (docs/operator.md), each with
// its own dependencies:
//
//   - JobReconciler (one per job kind, through the jobframework adapter) creates and
//     updates each managed job's Allocation, keeps the job's suspend field and pod templates
//     in line with it (SyncJob: an Admitted Allocation starts its job with its resume point),
//     and marks it Finished when the job ends (then records the observed epochs in the job's
//     model profile);
//   - HandshakeReconciler carries out preemptions: it puts the checkpoint request on every
//     pod of a victim, waits for every acknowledgement or the deadline, suspends the job, and
//     requeues the Allocation once the pods are gone (only then are the GPUs free);
//   - Binder binds the pods of admitted jobs (schedulerName pickyman) to the nodes of their
//     gang placement.
//
// The scheduling cycle is package scheduler: it decides and writes Allocations only; the
// reconcilers tell it what they observe and ask it for cycles through its Inbox. The
// helpers on Allocation objects they share are package allocation.
//
// All of the operator's state is in Allocations and pod annotations, so every step is
// idempotent and a restarted operator resumes where the last one stopped.
package controller
