package coord

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/gpu"
)

// PublishGPULabels sets the GPU feature-discovery labels of devs on node (a merge patch of
// the node's labels, the only write the agent makes to a node).
func PublishGPULabels(ctx context.Context, c client.Client, node string, devs []gpu.Device) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": gpu.Labels(devs)}})
	if err != nil {
		return err
	}
	n := &corev1.Node{}
	n.Name = node
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label node %s: %w", node, err)
	}
	return nil
}
