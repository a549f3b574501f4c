// Package kubetest holds the helpers of the agent's integration tests and the testbed
// agent's: a kube-apiserver and etcd from KUBEBUILDER_ASSETS (controller-runtime's envtest;
// make test-agent-integration sets it to bin/), the pods and nodes they create, and a
// checkpoint directory's bandwidth (CalibrateDir) for the real-training tests.
package kubetest

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Client starts kube-apiserver and etcd from KUBEBUILDER_ASSETS (make
// test-agent-integration sets it to bin/) for one test.
func Client(t testing.TB) client.WithWatch {
	c, _ := Env(t)
	return c
}

// Env is Client that also returns the API server's rest config.
func Env(t testing.TB) (client.WithWatch, *rest.Config) {
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
	return c, cfg
}

func Create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func Node(name string, lbl map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}}
}

func Pod(name, nodeName string, ann map[string]string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: ann},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "pytorch", Image: "none",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
	}
}

func Annotation(c client.Client, name, key string) (string, bool) {
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, p); err != nil {
		return "", false
	}
	v, ok := p.Annotations[key]
	return v, ok
}

func Eventually(t testing.TB, what string, timeout time.Duration, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !f(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}
