//go:build tools

// Package tools pins the Kubernetes control-plane commands and etcd that the local testbed
// cluster runs. They are built into bin/ by mk/cluster.mk; nothing imports this package.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
