// Package integration runs the agent's coordinator and testbed mode against a real
// kube-apiserver and etcd (testbed/envtest; build tag integration, `make
// test-agent-integration`): the field-selector list and watch of its node's pods, the
// acknowledgement and label patches, and a simulated pod completed through the cluster's
// completion annotation.
package integration
