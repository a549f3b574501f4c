// Package integration tests the operator's controllers and webhooks against a real
// kube-apiserver and etcd (controller-runtime envtest, with the binaries `make tools` builds
// into bin/). No kubelet, kube-scheduler or training-operator runs: a stand-in for the
// training-operator creates a job's pods while it is not suspended and deletes them when
// it is, and the tests play the node agent by writing checkpoint acknowledgements.
//
// Run with `make test-integration` (build tag integration).
package integration
