// Package controller holds the PickyMan operator's controllers (docs/operator.md):
//
//   - JobReconciler (one per job kind, through the jobframework adapter) creates and
//     updates each managed job's Allocation, keeps the job's suspend field and pod templates
//     in line with it, and marks it Finished when the job ends (then records the observed
//     epochs in the job's model profile);
//   - Scheduler, a leader-elected runnable, runs the scheduling cycle: snapshot, the
//     configured policy, sched.Validate, act (Allocation first, then the job or its pods);
//   - HandshakeReconciler carries out preemptions: it asks every pod of a victim to
//     checkpoint, waits for every acknowledgement or the deadline, suspends the job, and
//     requeues the Allocation once the pods are gone (only then are the GPUs free);
//   - Binder binds the pods of admitted jobs (schedulerName pickyman) to the nodes of their
//     gang placement.
//
// All of the operator's state is in Allocations and pod annotations, so every step is
// idempotent and a restarted operator resumes where the last one stopped.
package controller
