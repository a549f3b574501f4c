// Package overhead is PickyMan's model of what preempting a job costs (docs/policy.md,
// "Overhead model").
//
// For a running job v with epoch time T (from the predictor) and phase f (work done since
// its last checkpoint, the time into the current epoch when it checkpoints every epoch):
//
//	boundary suspend: GPUs free after  s_v = T - f + ckpt_bytes / write_bw   (nothing lost)
//	immediate suspend: GPUs free after the grace period; f of work on G_v GPUs is lost
//	resume:            r_v = start + ckpt_bytes / read_bw                  (start includes warm-up)
//
// The parameters (start, write and read bandwidth, grace period) have defaults and are
// learned online, per job, per model and cluster-wide, from the events the operator or the
// simulator reports: a job's first start shows its container start and warm-up; a boundary
// suspend shows its checkpoint write (the time from the epoch end to the GPUs being free);
// a resume shows start plus checkpoint load. Every overhead the policy acts on is recorded
// with Expect and scored against the observed one.
package overhead
