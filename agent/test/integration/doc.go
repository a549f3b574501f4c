// Package integration runs the agent's coordinator against a real kube-apiserver and etcd
// (controller-runtime's envtest on the binaries in KUBEBUILDER_ASSETS; build tag
// integration, `make test-agent-integration`): the field-selector list and watch of its
// node's pods, and the acknowledgement and label patches.
package integration
