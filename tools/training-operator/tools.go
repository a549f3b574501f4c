//go:build tools

// Package tools pins the Kubeflow training-operator that the local testbed cluster runs as a
// local process, and whose CRDs it installs. It is built into bin/ by mk/cluster.mk.
package tools

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
