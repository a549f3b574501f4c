//go:build integration

package agentsim

// The testbed agent on a real API server (envtest): make test-agent-integration.

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pickyman/pickyman/agent/test/kubetest"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/gpu"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// TestTestbedOnAPIServer: a pod on a fake node runs its epochs and completes.
func TestTestbedOnAPIServer(t *testing.T) {
	c := kubetest.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := map[string]string{AnnotationEpochTime: "10s", v1alpha1.AnnotationEpochs: "3",
		v1alpha1.AnnotationDatasetBytes: "1000000000", v1alpha1.AnnotationCheckpointBytes: "100000000"}
	p := kubetest.Pod("job-worker-0", "kwok-0", sim, 2)
	kubetest.Create(t, c, kubetest.Node("kwok-0", map[string]string{"type": "kwok", gpu.LabelCount: "8"}), p)
	running(t, c, p)
	// Time scale 100: start 0.5 s, three epochs of 0.1 s.
	tb := New(c, clock.RealClock{}, testr.New(t), labels.SelectorFromSet(labels.Set{"type": "kwok"}), DefaultPhysics(), 100, 1)
	tb.PodSync = 100 * time.Millisecond
	done := make(chan error)
	go func() { done <- tb.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("testbed agent: %v", err)
		}
	}()
	kubetest.Eventually(t, "pod completed", 20*time.Second, func() bool {
		v, _ := kubetest.Annotation(c, "job-worker-0", stages.CompleteAnnotation)
		return v == stages.CompleteSucceeded
	})
	v, _ := kubetest.Annotation(c, "job-worker-0", agentv1alpha1.AnnotationProgress)
	var prog agentv1alpha1.Progress
	if err := json.Unmarshal([]byte(v), &prog); err != nil || prog.EpochsDone != 3 {
		t.Errorf("progress %q (%v), want 3 epochs done", v, err)
	}
}

func running(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	p.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}
