//go:build tools

// Package tools pins kwok (the fake-node controller) and kwokctl (the cluster manager) for
// the local testbed cluster. They are built into bin/ by mk/cluster.mk.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
