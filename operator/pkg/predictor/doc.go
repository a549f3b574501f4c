// Package predictor is PickyMan's execution-time predictor (docs/policy.md,
// "Prediction"). It learns from the events the operator or the simulator reports
// (sched.Observer) and predicts, for any job, its epoch time, its execution time at its
// allocation and its remaining time:
//
//	remaining = remaining epochs x predicted epoch time - time into the current epoch
//
// The epoch time comes from the first source that has an answer, in this order:
//
//  1. live: the job's own observed epochs (EventEpoch) or, before its first epoch ends,
//     dataset bytes / smoothed storage-read rate (EventTraffic; a job reads its dataset
//     once per epoch);
//  2. profile: the model's trusted fit t(G) = a + b/G in the profile database (package
//     profile), which the predictor keeps current from finished epochs;
//  3. user: the run time the user declared (Job.UserEstimate);
//  4. prior: the median epoch time (or, for jobs of unknown length, the median run time)
//     of the finished jobs of the same queue;
//  5. none: the caller falls back to ordering by attained service.
//
// Every job's prediction at its first start is scored when the job ends against the
// execution time it actually had (its epochs times its observed epoch time), and the
// relative errors are exposed for the simulator's metrics.
package predictor
