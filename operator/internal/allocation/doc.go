// Package allocation holds what the scheduler and the reconcilers share about Allocation
// objects: the job ID, phases and conditions, GPUs held, placements in both forms (the
// scheduling core's slots and the Allocation's node assignments), the agents' progress read
// from the pods, the conversion into the scheduling core's sched.Job, and reading an
// Allocation's job and pods.
package allocation
