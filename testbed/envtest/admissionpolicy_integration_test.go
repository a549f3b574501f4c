//go:build integration

package envtest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/config/installer"
)

const (
	systemNS = "pickyman-system"
	agentSA  = "pickyman-agent"
	opSA     = "pickyman-operator"
)

// TestIntegrationAdmissionPolicies applies the installer's RBAC and admission policies to a
// real API server and checks, with the agent's real pod-bound service-account token (whose
// node claim the API server adds), what each identity may write: the agent only the
// pickyman.dev annotations it owns, on the pods of its own node, and only the GPU labels of
// its own node; nobody else the agent's annotations; only the operator the checkpoint
// request; no pod created with any of them.
func TestIntegrationAdmissionPolicies(t *testing.T) {
	cfg := Start(t)
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	applyInstaller(ctx, t, admin)

	for _, n := range []string{"node-a", "node-b"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"team": "ml"}}}
		if err := admin.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "train"}})
	pod := func(ns, name, node, sa string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"team": "ml"}},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: sa,
				Containers: []corev1.Container{{Name: "c", Image: "trainer:v1"}}},
		}
		mustCreate(ctx, t, admin, p)
		return p
	}
	agentPod := pod(systemNS, "agent-a", "node-a", agentSA)
	pod("train", "on-a", "node-a", "")
	pod("train", "on-b", "node-b", "")

	agent := tokenClient(ctx, t, cfg, kube, agentSA, agentPod)
	unbound := tokenClient(ctx, t, cfg, kube, agentSA, nil)
	operator := tokenClient(ctx, t, cfg, kube, opSA, nil)

	progress := map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationProgress: `{"epochsDone":1}`}}}
	request := map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: `{"id":"r1","mode":"boundary"}`}}}
	podPatch := func(c client.Client, ns, name string, patch map[string]any) error {
		b, _ := json.Marshal(patch)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		return c.Patch(ctx, p, client.RawPatch(types.MergePatchType, b))
	}
	nodePatch := func(c client.Client, name string, patch map[string]any) error {
		b, _ := json.Marshal(patch)
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, b))
	}

	// Each policy takes effect once the API server has loaded it and its binding, each on its
	// own: wait for a refusal by every one (a probe allowed before then changes nothing that
	// the cases below depend on). Every probe writes a new value: the policies judge what an
	// update changes, so a probe that repeated an allowed write would be allowed for ever.
	deadline := time.Now().Add(30 * time.Second)
	n := 0
	for policy, probe := range map[string]func(n int) error{
		"pickyman-agent-node-restriction": func(n int) error {
			return podPatch(agent, "train", "on-b", map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationProgress: fmt.Sprintf(`{"epochsDone":%d}`, n)}}})
		},
		"pickyman-agent-writes": func(n int) error {
			return podPatch(agent, "train", "on-a", map[string]any{"metadata": map[string]any{"labels": map[string]string{"probe": strconv.Itoa(n)}}})
		},
		"pickyman-agent-annotations": func(n int) error {
			return podPatch(admin, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: fmt.Sprintf(`{"id":"probe-%d","mode":"now"}`, n)}}})
		},
	} {
		for n++; probe(n) == nil; n++ {
			if time.Now().After(deadline) {
				t.Fatalf("admission policy %s is not in force after 30s", policy)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	tests := []struct {
		name    string
		do      func() error
		refused string // "" if allowed; else a part of the refusal's message
	}{
		{"the agent annotates a pod on its node", func() error { return podPatch(agent, "train", "on-a", progress) }, ""},
		{"the agent annotates a pod on another node", func() error { return podPatch(agent, "train", "on-b", progress) },
			"may change only the pods bound to its node, not on-b on node-b"},
		{"the agent without a node-bound token", func() error { return podPatch(unbound, "train", "on-a", progress) },
			"carries no node claim"},
		{"the agent changes a container image", func() error {
			return podPatch(agent, "train", "on-a", map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "evil:v1"}}}})
		}, "may not change a pod's or a node's spec"},
		{"the agent writes another annotation", func() error {
			return podPatch(agent, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]string{"team": "other"}}})
		}, "may change only the pickyman.dev/progress and pickyman.dev/checkpoint-ack annotations"},
		{"the agent writes a pod label", func() error {
			return podPatch(agent, "train", "on-a", map[string]any{"metadata": map[string]any{"labels": map[string]string{"x": "y"}}})
		}, "may change only the pickyman.dev/progress"},
		{"the agent writes the checkpoint request", func() error { return podPatch(agent, "train", "on-a", request) },
			// Two policies refuse it; the API server names whichever it evaluated first.
			"may change only the pickyman.dev/progress and pickyman.dev/checkpoint-ack annotations|may not write pickyman.dev/checkpoint-request: only the operator does"},
		{"the agent labels its node's GPUs", func() error {
			return nodePatch(agent, "node-a", map[string]any{"metadata": map[string]any{"labels": map[string]string{"nvidia.com/gpu.count": "8"}}})
		}, ""},
		{"the agent labels another node", func() error {
			return nodePatch(agent, "node-b", map[string]any{"metadata": map[string]any{"labels": map[string]string{"nvidia.com/gpu.count": "8"}}})
		}, "may change only its own node, not node-b"},
		{"the agent writes another label of its node", func() error {
			return nodePatch(agent, "node-a", map[string]any{"metadata": map[string]any{"labels": map[string]string{"team": "other"}}})
		}, "only the nvidia.com/gpu.* labels"},
		{"the agent cordons its node", func() error {
			return nodePatch(agent, "node-a", map[string]any{"spec": map[string]any{"unschedulable": true}})
		}, "may not change a pod's or a node's spec"},
		{"the operator asks for a checkpoint", func() error { return podPatch(operator, "train", "on-a", request) }, ""},
		{"a cluster admin forges progress", func() error {
			return podPatch(admin, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationProgress: `{"epochsDone":99}`}}})
		}, "may not write pickyman.dev/progress: only the node agent does"},
		{"a cluster admin removes the progress the agent wrote", func() error {
			return podPatch(admin, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]any{agentv1alpha1.AnnotationProgress: nil}}})
		}, "only the node agent does"},
		{"a cluster admin asks for another checkpoint", func() error {
			return podPatch(admin, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: `{"id":"r2","mode":"now"}`}}})
		},
			"may not write pickyman.dev/checkpoint-request: only the operator does"},
		{"a pod is created with forged progress", func() error {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: "forged",
				Annotations: map[string]string{agentv1alpha1.AnnotationCheckpointAck: `{"epoch":40}`}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "trainer:v1"}}}}
			return admin.Create(ctx, p)
		}, "a pod is not created with pickyman.dev/checkpoint-ack"},
		{"the agent writes a value over 4 KiB", func() error {
			return podPatch(agent, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationProgress: strings.Repeat("x", 5000)}}})
		}, "at most 4096 bytes"},
		{"a cluster admin writes its own annotation", func() error {
			return podPatch(admin, "train", "on-a", map[string]any{"metadata": map[string]any{"annotations": map[string]string{"team": "other"}}})
		}, ""},
	}
	for _, tc := range tests {
		err := tc.do()
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && err == nil:
			t.Errorf("%s: allowed, want it refused", tc.name)
		case tc.refused != "" && (!apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) ||
			!slices.ContainsFunc(strings.Split(tc.refused, "|"), func(w string) bool { return strings.Contains(err.Error(), w) })):
			t.Errorf("%s: %v, want a refusal containing %q (| separates alternatives)", tc.name, err, tc.refused)
		}
	}
}

// applyInstaller creates the namespace, service accounts, RBAC and admission policies of
// the installer (config/default); the workloads and webhooks are left out.
func applyInstaller(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	objs, err := installer.Objects(installer.Options{Kustomization: "../../config/default"})
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{"Namespace": true, "ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true,
		"Role": true, "RoleBinding": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	// Namespaces first: the rendering keeps the kustomization's order.
	rank := func(o *unstructured.Unstructured) int {
		if o.GetKind() == "Namespace" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return cmp.Compare(rank(a), rank(b)) })
	n := 0
	for _, o := range objs {
		if !keep[o.GetKind()] {
			continue
		}
		if err := c.Create(ctx, o.DeepCopyObject().(*unstructured.Unstructured)); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			n++
		}
	}
	if n != 6 {
		t.Fatalf("the installer has %d admission policies and bindings, want 6", n)
	}
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(ctx, o); err != nil {
		t.Fatalf("create %s: %v", o.GetName(), err)
	}
}

// tokenClient is a client that authenticates with a token of service account sa of
// pickyman-system, bound to pod if it is set (the token a pod's projected volume holds).
func tokenClient(ctx context.Context, t *testing.T, cfg *rest.Config, kube kubernetes.Interface, sa string, pod *corev1.Pod) client.Client {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tok, err := kube.CoreV1().ServiceAccounts(systemNS).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s: %v", sa, err)
	}
	c := rest.AnonymousClientConfig(cfg)
	c.BearerToken = tok.Status.Token
	cl, err := client.New(c, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
