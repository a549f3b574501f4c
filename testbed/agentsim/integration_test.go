//go:build integration

package agentsim

// The testbed agent on a real API server (envtest): make test-agent-integration.

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	pmenvtest "github.com/pickyman/pickyman/testbed/envtest"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/gpu"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// TestTestbedOnAPIServer: a pod on a fake node runs its epochs and completes.
func TestTestbedOnAPIServer(t *testing.T) {
	c := kubeClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := map[string]string{AnnotationEpochTime: "10s", v1alpha1.AnnotationEpochs: "3",
		v1alpha1.AnnotationDatasetBytes: "1000000000", v1alpha1.AnnotationCheckpointBytes: "100000000"}
	p := pod("job-worker-0", "kwok-0", sim, 2)
	create(t, c, node("kwok-0", map[string]string{"type": "kwok", gpu.LabelCount: "8"}), p)
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
	eventually(t, "pod completed", 20*time.Second, func() bool {
		v, _ := annotation(c, "job-worker-0", stages.CompleteAnnotation)
		return v == stages.CompleteSucceeded
	})
	v, _ := annotation(c, "job-worker-0", agentv1alpha1.AnnotationProgress)
	var prog agentv1alpha1.Progress
	if err := json.Unmarshal([]byte(v), &prog); err != nil || prog.EpochsDone != 3 {
		t.Errorf("progress %q (%v), want 3 epochs done", v, err)
	}
}

func kubeClient(t *testing.T) client.WithWatch {
	cfg := pmenvtest.Start(t)
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

func running(t *testing.T, c client.Client, p *corev1.Pod) {
	t.Helper()
	p.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
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
