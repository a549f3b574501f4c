// Package sim is the testbed's discrete-event simulator (docs/architecture.md and docs/simulator.md).
//
// An Engine replays a trace of jobs on a cluster of GPU nodes under one scheduling policy
// from the operator's own scheduling core (operator/pkg/sched and the policies registered in
// operator/pkg/policies): the simulator builds the same sched.Snapshot the operator builds,
// calls the policy, and carries out its Decisions with the physics of docs/simulator.md.
//
// Events live in a heap keyed by time, then by a sequence number, so runs are deterministic.
// Arrivals are read from the trace in submit order. At each instant the engine (1) advances
// the clock and the progress of running jobs, reporting traffic and epochs to an observing
// policy, (2) applies every event of that instant (finish, GPUs freed by a suspend, warm-up
// done, reservation timeout, scheduling tick), (3) refreshes the snapshot, (4) calls the
// policy once if any job waits (with none queued there is nothing to decide), (5) validates
// and applies the decisions, and (6) records the time series.
// Progress is analytic: a running job's progress is a linear function of time after its
// warm-up, so epochs cost no events. The snapshot is maintained incrementally: only jobs
// that are not finished are in it, and a cycle costs time proportional to them.
//
// Physics (Physics, with documented defaults) is paid by every policy: checkpoints at epoch
// ends, suspend at the boundary (run on to the epoch end, write the checkpoint, free GPUs),
// suspend now (grace period, work since the last checkpoint lost), resume (container start,
// checkpoint load, warm-up) and per-job lognormal noise on these costs and on read traffic.
// Ideal mode makes every overhead zero, as most research simulators assume.
package sim
