// Package cluster brings the local testbed cluster up and down (docs/testbed.md): a
// kwokctl cluster whose control plane (etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager) and kwok controller are local binaries built from Go modules into
// bin/, fake GPU nodes that carry nvidia.com/gpu and the GPU feature-discovery labels, the
// Kubeflow training-operator's CRDs, and the training-operator itself as a local process.
//
// Up runs in numbered phases (binaries, control plane, CRDs, nodes, training-operator), each
// idempotent, so running it on a cluster that is already up only repairs what is missing. Down
// stops the training-operator, deletes the kwokctl cluster and then checks that no process it
// started is alive and no port it listened on is still open.
//
// The node model (Pool, BuildNodes) is pure and usable on any cluster: the e2e suites create
// their fake GPU nodes with it on kind clusters too. The kwok stages that drive fake pods live
// in config/kwok/; the signals they select on are named in the stages subpackage.
package cluster
