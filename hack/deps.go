//go:build tools

// Package hack pins modules that several packages of the product use, so that go.mod
// records them once with agreed versions.
package hack

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/term"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/utils/clock"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
)
