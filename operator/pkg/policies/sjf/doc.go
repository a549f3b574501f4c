// Package sjf is the shortest-job-first baseline policy with oracle knowledge of each
// job's service time, without preemption.
package sjf
