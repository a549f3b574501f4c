package app

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pickyman/pickyman/agent/pkg/gpu"
)

// TestPublishLabelsLeavesGFDNodes: by default the agent labels its node only where NVIDIA's
// GPU feature discovery does not (the GPU Operator owns the same keys there); with
// --label-node=true it labels every node.
func TestPublishLabelsLeavesGFDNodes(t *testing.T) {
	const gfdProduct = "NVIDIA-H100-80GB-HBM3" // what GFD wrote
	for name, tc := range map[string]struct {
		mode        string
		gfd         bool
		wantPublish bool
		wantProduct string
	}{
		"auto, no GFD":     {mode: LabelAuto, wantPublish: true, wantProduct: "NVIDIA-A100-SXM4-40GB"},
		"auto, GFD labels": {mode: LabelAuto, gfd: true, wantProduct: gfdProduct},
		"always, GFD":      {mode: LabelAlways, gfd: true, wantPublish: true, wantProduct: "NVIDIA-A100-SXM4-40GB"},
		"always, no GFD":   {mode: LabelAlways, wantPublish: true, wantProduct: "NVIDIA-A100-SXM4-40GB"},
	} {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}}}
			if tc.gfd {
				node.Labels[LabelGFDTimestamp] = "1733212800"
				node.Labels[gpu.LabelProduct] = gfdProduct
			}
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).Build()
			b, err := gpu.NewFake(gpu.FakeConfig{Node: "n1", Product: "NVIDIA A100-SXM4-40GB", Count: 2, MemoryMiB: 40960})
			if err != nil {
				t.Fatal(err)
			}
			published, err := PublishLabels(context.Background(), kube, "n1", tc.mode, b)
			if err != nil {
				t.Fatal(err)
			}
			if published != tc.wantPublish {
				t.Errorf("published %v, want %v", published, tc.wantPublish)
			}
			got := &corev1.Node{}
			if err := kube.Get(context.Background(), client.ObjectKey{Name: "n1"}, got); err != nil {
				t.Fatal(err)
			}
			if p := got.Labels[gpu.LabelProduct]; p != tc.wantProduct {
				t.Errorf("node label %s = %q, want %q", gpu.LabelProduct, p, tc.wantProduct)
			}
		})
	}
}
