// Package e2e holds the Ginkgo end-to-end suites (build tag "e2e"). They run against the
// cluster of -kubeconfig or $KUBECONFIG; with neither, the suite brings the local testbed
// cluster up itself (testbed/cluster) and takes it down at the end.
//
//	make test-cluster   # local testbed cluster, brought up and down by the suite
//	make e2e            # the current kubeconfig (a kind cluster with kwok, for example)
//
// The suites create their own fake GPU nodes, labelled with the run's id, and pin their jobs
// to them, so they also run on clusters that have other nodes.
package e2e
