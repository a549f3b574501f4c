//go:build tools

// Package tools pins controller-gen, which generates the CRDs, RBAC and deepcopy code.
// It is built into bin/ by mk/cluster.mk.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
