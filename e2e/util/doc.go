// Package util holds the builders and assertion helpers of the e2e suites: a PyTorchJob
// builder, and helpers that wait for a job's pods, check where kube-scheduler bound them, and
// end them the way the testbed's simulated training does (the completion annotation).
package util
