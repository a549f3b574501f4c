package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// Clients talks to one cluster.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// NewClients loads a kubeconfig; the rate limits suit creating a thousand nodes.
func NewClients(kubeconfig string) (*Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kube, Dynamic: dyn}, nil
}

// WaitReady waits until the API server answers /readyz.
func (c *Clients) WaitReady(ctx context.Context, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		body, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// EnsureNodes creates the nodes that do not exist yet (16 at a time) and leaves the others.
// It returns how many it created.
func (c *Clients) EnsureNodes(ctx context.Context, nodes []*corev1.Node) (int, error) {
	var (
		mu      sync.Mutex
		created int
		first   error
		wg      sync.WaitGroup
		work    = make(chan *corev1.Node)
	)
	for range 16 {
		wg.Go(func() {
			for n := range work {
				_, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: fieldManager})
				mu.Lock()
				switch {
				case err == nil:
					created++
				case apierrors.IsAlreadyExists(err):
				case first == nil:
					first = fmt.Errorf("create node %s: %w", n.Name, err)
				}
				mu.Unlock()
			}
		})
	}
	for _, n := range nodes {
		work <- n
	}
	close(work)
	wg.Wait()
	return created, first
}

// WaitNodesReady waits until every named node reports Ready=True.
func (c *Clients) WaitNodesReady(ctx context.Context, names []string, timeout time.Duration) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var notReady int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			if want[list.Items[i].Name] && NodeReady(&list.Items[i]) {
				ready++
			}
		}
		notReady = len(want) - ready
		return notReady == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d nodes not Ready (is the kwok controller running?): %w", notReady, len(want), err)
	}
	return nil
}

// NodeReady says whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DeleteNodes deletes the nodes with these names (missing ones are fine).
func (c *Clients) DeleteNodes(ctx context.Context, names []string) error {
	for _, n := range names {
		err := c.Kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

const fieldManager = "pickyman-testbed"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs server-side applies every CRD file of dir and waits until each is Established.
func (c *Clients) ApplyCRDs(ctx context.Context, dir string, timeout time.Duration) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		_, err = c.Dynamic.Resource(crdGVR).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return nil, fmt.Errorf("apply CRD %s from %s: %w", obj.GetName(), f, err)
		}
		names = append(names, obj.GetName())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no CRDs in %s (run `make tools`)", dir)
	}
	if err := c.waitEstablished(ctx, names, timeout); err != nil {
		return nil, err
	}
	return names, nil
}

// waitEstablished waits until every named CRD is Established.
func (c *Clients) waitEstablished(ctx context.Context, names []string, timeout time.Duration) error {
	for _, n := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			u, err := c.Dynamic.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", n, err)
		}
	}
	return nil
}
