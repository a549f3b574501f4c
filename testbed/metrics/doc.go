// Package metrics defines the testbed's measurements, one definition for the simulator and
// the cluster testbed (docs/simulator.md).
//
// Per job (JobRecord): queueing delay (submit to first start), waiting time (all time the job
// did not hold GPUs before it completed: queueing plus time suspended), JCT (completion minus
// submit), preemptions, and GPU-seconds lost to preemption, which is the sum of three terms
// times the job's GPUs:
//
//   - redone work: work done since the last checkpoint that a suspend-now threw away and the
//     job had to do again;
//   - suspend wait: time a preempted job held its GPUs without making progress that survives,
//     that is the checkpoint write at the epoch boundary of a boundary suspend and the grace
//     period of a suspend-now (the run on to the boundary is useful work and is not counted);
//   - resume overhead: container start, checkpoint load and warm-up after each resume (the
//     first start's container start and warm-up are not caused by preemption and are kept
//     apart as StartOverhead).
//
// A job's held time therefore splits exactly into service + redone work + start overhead +
// resume overhead + suspend wait, and JCT = waiting time + held time.
//
// Per run (Summary): mean, p50, p95 and p99 of waiting time and JCT (percentiles interpolate
// linearly between closest ranks), makespan (first submit to last completion), GPU
// utilization, total preemptions, GPU-hours lost, a bounded time series of utilization and
// queue length, and the prediction error of policies that report one (PredictionReporter).
//
// Utilization is allocated GPU-time / (cluster GPUs x makespan): time GPUs were held by a job,
// including warm-up and suspend waits, as a cluster dashboard shows it. UsefulUtilization
// counts only the service time that survives (the trace's own GPU-time).
package metrics
