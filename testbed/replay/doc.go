// Package replay replays a trace on a Kubernetes cluster that runs PickyMan's operator and
// the agent in testbed mode: it submits one PyTorchJob per trace job at its scaled arrival
// time, follows the jobs to completion, and reads every job's timeline back from the API
// server (the operator's events and Allocations, not its memory) into the same metrics.Run
// that the simulator produces, so the two can be compared job for job.
//
// Time: the agent divides trace durations by the time scale; the replay submits job i at
// real time start + Submit_i / scale and maps every observed real time t back to trace time
// (t - start) x scale.
package replay
