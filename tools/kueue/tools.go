//go:build tools

// Package tools pins Kueue's controller manager (sigs.k8s.io/kueue, unmodified) that the local
// testbed cluster runs as a local process on request (pickyman cluster up --kueue), and whose
// CRDs and webhook configurations it installs. It is built into bin/ by mk/kueue.mk.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
