package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// kueueManifests has the shape of Kueue's config/components/webhook/manifests.yaml.
const kueueManifests = `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-kueue-x-k8s-io-v1beta2-clusterqueue}
  failurePolicy: Fail
  name: mclusterqueue.kb.io
  rules:
  - apiGroups: [kueue.x-k8s.io]
    apiVersions: [v1beta2]
    operations: [CREATE]
    resources: [clusterqueues]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-kubeflow-org-v1-jaxjob}
  name: mjaxjob.kb.io
  rules:
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [jaxjobs]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-kubeflow-org-v1-pytorchjob}
  name: mpytorchjob.kb.io
  rules:
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pytorchjobs]
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-batch-v1-job}
  name: vjob.kb.io
  rules:
  - apiGroups: [batch]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [jobs]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-kueue-x-k8s-io-v1beta2-workload}
  name: vworkload.kb.io
  rules:
  - apiGroups: [kueue.x-k8s.io]
    apiVersions: [v1beta2]
    operations: [CREATE, UPDATE]
    resources: [workloads, workloads/status]
  sideEffects: None
`

func TestKueueWebhooks(t *testing.T) {
	muts, vals, err := KueueWebhooks([]byte(kueueManifests), "https://localhost:9443", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 1 || len(vals) != 1 {
		t.Fatalf("%d mutating, %d validating configurations", len(muts), len(vals))
	}
	if muts[0].Name != KueueMutatingWebhooks || vals[0].Name != KueueValidatingWebhooks {
		t.Errorf("names %s, %s", muts[0].Name, vals[0].Name)
	}
	type hook struct{ Name, URL, CA string }
	var got []hook
	add := func(name string, cc admissionv1.WebhookClientConfig) {
		if cc.Service != nil {
			t.Errorf("%s still calls a Service", name)
		}
		got = append(got, hook{name, *cc.URL, string(cc.CABundle)})
	}
	for _, w := range muts[0].Webhooks {
		add(w.Name, w.ClientConfig)
	}
	for _, w := range vals[0].Webhooks {
		add(w.Name, w.ClientConfig)
	}
	want := []hook{
		{"mclusterqueue.kb.io", "https://localhost:9443/mutate-kueue-x-k8s-io-v1beta2-clusterqueue", "CA"},
		{"mpytorchjob.kb.io", "https://localhost:9443/mutate-kubeflow-org-v1-pytorchjob", "CA"},
		{"vworkload.kb.io", "https://localhost:9443/validate-kueue-x-k8s-io-v1beta2-workload", "CA"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("webhooks (-want +got):\n%s", d)
	}
	if _, _, err := KueueWebhooks([]byte("kind: ConfigMap\n"), "https://localhost:1", nil); err == nil {
		t.Error("a manifest of another kind was accepted")
	}
	if _, _, err := KueueWebhooks([]byte(strings.SplitN(kueueManifests, "---\napiVersion: admissionregistration.k8s.io/v1\nkind: Validating", 2)[0]), "https://localhost:1", nil); err == nil {
		t.Error("a manifest without a validating configuration was accepted")
	}
}

func TestKueueConfig(t *testing.T) {
	var cfg map[string]any
	if err := yaml.Unmarshal(KueueConfig(8081, 9443, "/certs"), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": KueueNamespace,
		"health":                     map[string]any{"healthProbeBindAddress": "127.0.0.1:8081"},
		"metrics":                    map[string]any{"bindAddress": "0"},
		"webhook":                    map[string]any{"host": "127.0.0.1", "port": float64(9443), "certDir": "/certs"},
		"leaderElection":             map[string]any{"leaderElect": false},
		"internalCertManagement":     map[string]any{"enable": false},
		"manageJobsWithoutQueueName": false,
		"clientConnection":           map[string]any{"qps": float64(50), "burst": float64(100)},
		"integrations":               map[string]any{"frameworks": []any{"kubeflow.org/pytorchjob"}},
	}
	if d := cmp.Diff(want, cfg); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
}

func TestKueueStarted(t *testing.T) {
	// Kueue v0.17.0's lines, shortened.
	workload := `{"level":"info","logger":"workload-reconciler","msg":"Starting workers","replica-role":"standalone","worker count":1}`
	pytorch := `{"level":"info","logger":"pytorchjob","msg":"Starting workers","replica-role":"standalone","worker count":1}`
	old := "earlier run\n" + workload + "\n" + pytorch + "\n"
	cases := map[string]struct {
		log  string
		from int64
		want bool
	}{
		"both":            {workload + "\n" + pytorch + "\n", 0, true},
		"workload only":   {workload + "\n", 0, false},
		"another logger":  {strings.ReplaceAll(workload, "workload-reconciler", "multikueue-workload") + "\n" + pytorch, 0, false},
		"an earlier run":  {old + "starting\n", int64(len(old)), false},
		"a truncated log": {"x", 10, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := kueueStarted(tc.log, tc.from); got != tc.want {
				t.Errorf("kueueStarted = %v, want %v", got, tc.want)
			}
		})
	}
}
