//go:build integration

package envtest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pickyman/pickyman/testbed/cluster"
)

// TestIntegrationNodeRoundTrip creates a fake GPU node in a real API server and reads it back
// with its GPU capacity and labels.
func TestIntegrationNodeRoundTrip(t *testing.T) {
	cfg := Start(t)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.BuildNode("kwok-a100-0", cluster.Pool{Nodes: 1, GPUsPerNode: 8, Model: "A100"})
	ctx := context.Background()
	if _, err := kube.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := kube.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gpus := got.Status.Allocatable[cluster.GPUResource]
	if gpus.Value() != 8 {
		t.Errorf("allocatable %s = %v, want 8", cluster.GPUResource, gpus.String())
	}
	if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}
