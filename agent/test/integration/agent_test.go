//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// kubeClient starts kube-apiserver and etcd from KUBEBUILDER_ASSETS (make
// test-agent-integration sets it to bin/) for one test.
func kubeClient(t *testing.T) client.WithWatch {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test-agent-integration`")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func node(name string, lbl map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}}
}

func pod(name, nodeName string, ann map[string]string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: ann},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "pytorch", Image: "none",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
	}
}

func annotation(c client.Client, name, key string) (string, bool) {
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, p); err != nil {
		return "", false
	}
	v, ok := p.Annotations[key]
	return v, ok
}

func eventually(t *testing.T, what string, timeout time.Duration, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !f(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}

func TestAgentOnAPIServer(t *testing.T) {
	c := kubeClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := json.Marshal(agentv1alpha1.CheckpointRequest{ID: "r1", Mode: agentv1alpha1.ModeBoundary})
	ask := map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(req)}
	mine, other := pod("mine", "n1", ask, 1), pod("other", "n2", ask, 1)
	create(t, c, node("n1", nil), node("n2", nil), mine, other)

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
	eventually(t, "pod of n1 in the registry", 10*time.Second, func() bool { _, ok := reg.Pod(string(mine.UID)); return ok })
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
	eventually(t, "acknowledgement on the pod", 10*time.Second, func() bool { _, ok := annotation(c, "mine", agentv1alpha1.AnnotationCheckpointAck); return ok })
	if _, ok := annotation(c, "other", agentv1alpha1.AnnotationCheckpointAck); ok {
		t.Error("the pod of n2 was acknowledged")
	}
	// A new pod on the node arrives through the watch, not the hourly resync.
	late := pod("late", "n1", nil, 1)
	create(t, c, late)
	eventually(t, "watched pod in the registry", 10*time.Second, func() bool { _, ok := reg.Pod(string(late.UID)); return ok })

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
