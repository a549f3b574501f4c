// Package envtest starts a real kube-apiserver and etcd for integration tests, with
// controller-runtime's envtest pointed at the binaries that `make tools` builds into bin/
// (nothing is downloaded). Integration tests carry the build tag "integration" and run with
// `make test-integration`.
//
// When the binaries are missing, Start fails with a message that names `make tools` if the
// environment variable CI is set, and skips the test otherwise.
package envtest
