package cluster

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestTestbedManifests builds the repository's config/testbed and config/agent as the testbed
// applies them.
func TestTestbedManifests(t *testing.T) {
	root, err := RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testbedManifests(filepath.Join(root, "config"), "127.0.0.1:9443")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	serviceAccounts := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() == "ServiceAccount" {
			serviceAccounts[o.GetNamespace()+"/"+o.GetName()] = true
		}
	}
	if kinds["DaemonSet"]+kinds["Deployment"] != 0 {
		t.Errorf("workloads left in the testbed manifests: %v", kinds)
	}
	for _, k := range []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the testbed manifests", k)
		}
	}
	for _, sa := range []string{PickyManNamespace + "/" + OperatorServiceAccount, PickyManNamespace + "/" + AgentServiceAccount} {
		if !serviceAccounts[sa] {
			t.Errorf("ServiceAccount %s missing; have %v", sa, serviceAccounts)
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRoleBinding", "RoleBinding":
			// Every binding names a ServiceAccount that the manifests create.
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				m := s.(map[string]any)
				if m["kind"] != "ServiceAccount" {
					continue
				}
				if id := m["namespace"].(string) + "/" + m["name"].(string); !serviceAccounts[id] {
					t.Errorf("%s %s binds ServiceAccount %s, which no manifest creates", o.GetKind(), o.GetName(), id)
				}
			}
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				url, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "url")
				if !strings.HasPrefix(url, "https://127.0.0.1:9443/") {
					t.Errorf("%s webhook %v: url %q, want the operator's local address", o.GetName(), h.(map[string]any)["name"], url)
				}
			}
		}
	}
}
