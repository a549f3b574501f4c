// Package pickyman is the PickyMan scheduling policy (docs/policy.md; the algorithm
// and its evidence are in docs/policy.md).
//
// Each cycle is one Schedule call on a snapshot:
//
//  1. start the waiting jobs whose reservations are free;
//  2. predict every job's remaining time (package predictor: observed epochs, storage-read
//     traffic, model profiles, user estimates, queue priors) and every running job's
//     preemption overhead (package overhead);
//  3. order the waiting jobs: priority class (raised by one per Promote waited) first, then
//     ascending key = predicted remaining time - Aging x time waited;
//  4. in that order start every job that fits in the free GPUs (gang, best fit), and for the
//     first MaxConsidered that do not, divide the running jobs: a victim group V_i for the
//     waiting job q_i, taken greedily from the jobs not yet assigned in ascending cost per
//     freed GPU, pruned to a minimal set, and preempted only if the waiting time it saves
//     q_i exceeds its cost (divide); its GPUs are reserved for q_i;
//  5. suspend each victim at its epoch boundary or now, whichever costs less.
//
// Aging bounds starvation within a priority class: a waiting job's key falls by Aging
// seconds per second waited, so a job with predicted remaining time R sorts ahead of every
// newly arrived job after waiting R/Aging at most. Class aging bounds it across classes: a
// job that has waited Promote sorts in the next higher class (up to the highest class
// waiting), so a lower class's jobs wait behind a higher class's for at most Promote per
// class between them before they compete on predicted remaining time alone. Promotion only
// reorders the queue; a job never preempts a job of a higher class than its own.
//
// Protected jobs are never victims: jobs that (re)started less than Protect ago, jobs
// preempted Budget times already, and jobs of a higher priority class than q_i.
//
// Variants (ablations): Blind ignores the overhead model, Oracle uses the simulator's true
// remaining times (the only code that reads Job.Oracle), Now suspends every victim at once.
package pickyman
