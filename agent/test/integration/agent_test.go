//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pickyman/pickyman/agent/test/kubetest"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

func TestAgentOnAPIServer(t *testing.T) {
	c := kubetest.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := json.Marshal(agentv1alpha1.CheckpointRequest{ID: "r1", Mode: agentv1alpha1.ModeBoundary})
	ask := map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(req)}
	mine, other := kubetest.Pod("mine", "n1", ask, 1), kubetest.Pod("other", "n2", ask, 1)
	kubetest.Create(t, c, kubetest.Node("n1", nil), kubetest.Node("n2", nil), mine, other)

	co := &coord.Coordinator{Client: c, Node: "n1", Clock: clock.RealClock{}, Log: testr.New(t), Resync: time.Hour}
	reg := api.NewRegistry(clock.RealClock{}, co)
	co.Registry = reg
	done := make(chan error)
	go func() { done <- co.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("coordinator: %v", err)
		}
	}()

	// Only the pod of its node reaches the registry (field selector on the real API server).
	kubetest.Eventually(t, "pod of n1 in the registry", 10*time.Second, func() bool { _, ok := reg.Pod(string(mine.UID)); return ok })
	if _, ok := reg.Pod(string(other.UID)); ok {
		t.Fatal("the agent of n1 holds a pod of n2")
	}
	c1 := api.Caller{Session: 1, PID: 1, PodUID: string(mine.UID)}
	if _, err := reg.Register(c1, "default/mine", 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := reg.CheckpointDone(c1, "r1", 0, "/ck/0", 7, 0.1); err != nil {
		t.Fatal(err)
	}
	// The acknowledgement is written at once (the resync is an hour: the wake-up does it).
	kubetest.Eventually(t, "acknowledgement on the pod", 10*time.Second, func() bool { _, ok := kubetest.Annotation(c, "mine", agentv1alpha1.AnnotationCheckpointAck); return ok })
	if _, ok := kubetest.Annotation(c, "other", agentv1alpha1.AnnotationCheckpointAck); ok {
		t.Error("the pod of n2 was acknowledged")
	}
	// A new pod on the node arrives through the watch, not the hourly resync.
	late := kubetest.Pod("late", "n1", nil, 1)
	kubetest.Create(t, c, late)
	kubetest.Eventually(t, "watched pod in the registry", 10*time.Second, func() bool { _, ok := reg.Pod(string(late.UID)); return ok })

	// GPU labels on the node.
	f, _ := gpu.NewFake(gpu.FakeConfig{Node: "n1", Product: "NVIDIA H100 80GB HBM3", Count: 8, MemoryMiB: 81559})
	devs, _ := f.Devices()
	if err := coord.PublishGPULabels(ctx, c, "n1", devs); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, types.NamespacedName{Name: "n1"}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels[gpu.LabelProduct] != "NVIDIA-H100-80GB-HBM3" || n.Labels[gpu.LabelCount] != "8" || n.Labels[gpu.LabelMemory] != "81559" {
		t.Errorf("node labels %v", n.Labels)
	}
}
