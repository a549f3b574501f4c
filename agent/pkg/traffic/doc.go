// Package traffic measures a training pod's storage read traffic and smooths it into the
// read rate that the PickyMan predictor turns into an epoch time (docs/policy.md,
// "Prediction": epoch time = dataset bytes / smoothed read rate).
//
// # What is counted
//
// The agent counts the bytes received in the pod's network namespace: the sum of the receive
// byte counters of every interface except loopback in /proc/<pid>/net/dev, where pid is a
// process of the pod (the agent learns it from the socket peer credentials of the training
// process; it needs the host PID namespace). This counts everything the pod receives, which on
// a training pod that reads its dataset over the network is dominated by storage reads; it
// also counts collective-communication traffic of multi-node jobs. The alternative,
// per-connection counters for configured storage endpoints (sock_diag with tcp_info), needs
// to enter the pod's namespace (CAP_SYS_ADMIN) and knowledge of every storage endpoint, so it
// is not used. When the training process reports the bytes it read per epoch (epoch_end's
// bytes), those are exact and take precedence; the counters are the fallback and the source
// for the rate between epoch ends.
//
// # Smoothing
//
// A sample closer than MinInterval (1 s) to the previous one is left to the next: the agent
// samples on a 2 s tick and on pod events, and a loader that reads a batch at once and then
// computes would give a short interval either a whole batch or nothing.
//
// Estimator keeps an exponentially weighted moving average (EWMA) of the interval rate
// r_i = (bytes_i - bytes_{i-1}) / (t_i - t_{i-1}) with weight Alpha, and an EWMA of the
// absolute deviation |r_i - mean| with the same weight, as TCP's round-trip estimator does
// (RFC 6298). A sample more than K deviations from the mean (the deviation floored at
// MinRelDev of the mean, so that a near-constant stream does not make every small wobble an
// outlier) is rejected: it does not move the estimate. Bursts (a cache that fills at once) and
// stalls (a checkpoint write) are thus ignored, but a lasting change is not: after MaxRejects
// consecutive rejected samples the estimator restarts from the mean of those samples. A
// counter that goes backwards (the pod's interface was recreated) restarts the interval
// without a sample, and so do idle intervals before the first byte (container start and
// warm-up), so that they do not drag the first estimate towards zero.
package traffic
