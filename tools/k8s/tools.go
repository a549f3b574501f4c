//go:build tools

// Package tools pins the Kubernetes control-plane commands and etcd that the local testbed
// cluster runs, and the kubelet and kube-proxy of its real nodes. They are built into bin/ by
// mk/cluster.mk (the kubelet and kube-proxy by mk/realnode.mk); nothing imports this package.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
