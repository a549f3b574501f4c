package installer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	testOperatorImage = "registry.example:5000/team/pickyman-operator:v9"
	testAgentImage    = "registry.example:5000/team/pickyman-agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// rendered builds a kustomization under config/ with the test images and indexes its objects
// by kind/namespace/name.
func rendered(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := Objects(Options{Kustomization: filepath.Join("..", "..", "config", dir), Operator: testOperatorImage, Agent: testAgentImage})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		out[key(u.GetKind(), u.GetNamespace(), u.GetName())] = u
	}
	return out
}

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func podSpec(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	if !ok {
		t.Fatalf("%s %s has no pod template", o.GetKind(), o.GetName())
	}
	return spec
}

func containers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, field := range []string{"initContainers", "containers"} {
		list, _, _ := unstructured.NestedSlice(spec, field)
		for _, c := range list {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

// TestDefaultInstalls checks that config/default, as dist/install.yaml renders it, installs on
// a bare cluster: nothing it needs from elsewhere, every reference resolved inside it.
func TestDefaultInstalls(t *testing.T) {
	objs := rendered(t, "default")
	const ns = "pickyman-system"

	t.Run("needs no other operator's kinds", func(t *testing.T) {
		for k, o := range objs {
			if g := o.GroupVersionKind().Group; g == "cert-manager.io" || g == "monitoring.coreos.com" {
				t.Errorf("%s needs %s installed", k, g)
			}
		}
	})
	t.Run("namespace admits the agent", func(t *testing.T) {
		nsObj := objs[key("Namespace", "", ns)]
		if nsObj == nil {
			t.Fatalf("no Namespace %s", ns)
		}
		if lvl := nsObj.GetLabels()["pod-security.kubernetes.io/enforce"]; lvl != "privileged" {
			t.Errorf("namespace %s enforces pod security %q; the agent's hostPath and hostPID need privileged", ns, lvl)
		}
	})
	op := objs[key("Deployment", ns, "pickyman-operator")]
	agent := objs[key("DaemonSet", ns, "pickyman-agent")]
	if op == nil || agent == nil {
		t.Fatalf("operator Deployment %v, agent DaemonSet %v: want both", op != nil, agent != nil)
	}
	t.Run("operator runs two replicas on the given image, rotating its certificate", func(t *testing.T) {
		if r, _, _ := unstructured.NestedInt64(op.Object, "spec", "replicas"); r != 2 {
			t.Errorf("replicas %d, want 2", r)
		}
		for _, c := range containers(podSpec(t, op)) {
			if c["image"] != testOperatorImage {
				t.Errorf("operator container %v runs %v, want %s", c["name"], c["image"], testOperatorImage)
			}
			args := fmt.Sprint(c["args"])
			if strings.Contains(args, "--webhook-certs=") {
				t.Errorf("operator args %s choose a certificate source; the default (rotate) is wanted", args)
			}
		}
	})
	t.Run("operator sets its Go memory limit from its container's", func(t *testing.T) {
		// The operator sets the runtime's soft limit from PICKYMAN_MEMORY_LIMIT
		// (operator/internal/app.MemoryLimit); without it the heap grows to the OOM kill.
		for _, c := range containers(podSpec(t, op)) {
			if _, ok, _ := unstructured.NestedString(c, "resources", "limits", "memory"); !ok {
				t.Errorf("operator container %v has no memory limit", c["name"])
			}
			env, _, _ := unstructured.NestedSlice(c, "env")
			var ref map[string]string
			for _, e := range env {
				if m := e.(map[string]any); m["name"] == "PICKYMAN_MEMORY_LIMIT" {
					ref, _, _ = unstructured.NestedStringMap(m, "valueFrom", "resourceFieldRef")
				}
			}
			if ref["resource"] != "limits.memory" || ref["containerName"] != c["name"] {
				t.Errorf("operator container %v: PICKYMAN_MEMORY_LIMIT from %v, want limits.memory of the container", c["name"], ref)
			}
		}
	})
	t.Run("agent runs the given image", func(t *testing.T) {
		for _, c := range containers(podSpec(t, agent)) {
			if c["image"] != testAgentImage {
				t.Errorf("agent container %v runs %v, want %s", c["name"], c["image"], testAgentImage)
			}
		}
	})
	t.Run("the operator's certificate Secret exists", func(t *testing.T) {
		if s := operatorSecret(t, op); objs[key("Secret", ns, s)] == nil {
			t.Errorf("the operator keeps its certificate in Secret %s, which the installer does not create", s)
		}
	})
	t.Run("pods reference what the installer creates", func(t *testing.T) {
		for _, w := range []*unstructured.Unstructured{op, agent} {
			spec := podSpec(t, w)
			sa, _ := spec["serviceAccountName"].(string)
			if objs[key("ServiceAccount", ns, sa)] == nil {
				t.Errorf("%s %s runs as ServiceAccount %q, which the installer does not create", w.GetKind(), w.GetName(), sa)
			}
			vols, _, _ := unstructured.NestedSlice(spec, "volumes")
			for _, v := range vols {
				vm := v.(map[string]any)
				if s, ok, _ := unstructured.NestedString(vm, "secret", "secretName"); ok && objs[key("Secret", ns, s)] == nil {
					t.Errorf("%s mounts Secret %s, which the installer does not create", w.GetName(), s)
				}
				if c, ok, _ := unstructured.NestedString(vm, "configMap", "name"); ok && objs[key("ConfigMap", ns, c)] == nil {
					t.Errorf("%s mounts ConfigMap %s, which the installer does not create", w.GetName(), c)
				}
			}
		}
	})
	t.Run("bindings name roles and service accounts that exist", func(t *testing.T) {
		for k, o := range objs {
			if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
				continue
			}
			ref, _, _ := unstructured.NestedStringMap(o.Object, "roleRef")
			roleNS := ""
			if ref["kind"] == "Role" {
				roleNS = o.GetNamespace()
			}
			if objs[key(ref["kind"], roleNS, ref["name"])] == nil {
				t.Errorf("%s refers to %s %s, which the installer does not create", k, ref["kind"], ref["name"])
			}
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				m := s.(map[string]any)
				if m["kind"] == "ServiceAccount" && objs[key("ServiceAccount", m["namespace"].(string), m["name"].(string))] == nil {
					t.Errorf("%s binds ServiceAccount %v/%v, which the installer does not create", k, m["namespace"], m["name"])
				}
			}
		}
	})
	t.Run("webhooks call an existing Service and see only PickyMan's objects", func(t *testing.T) {
		svc := objs[key("Service", ns, "pickyman-webhook-service")]
		if svc == nil {
			t.Fatal("no webhook Service")
		}
		n := 0
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			for k, o := range objs {
				if o.GetKind() != kind {
					continue
				}
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				for _, h := range hooks {
					n++
					checkWebhook(t, k, h.(map[string]any))
				}
			}
		}
		if n < 8 {
			t.Errorf("%d webhooks, want at least 8 (mutating and validating per job kind, PyTorchJob scale, the TrainJob pod webhook)", n)
		}
	})
}

// checkWebhook checks one webhook of config/default: it calls the webhook Service, never
// system namespaces, and, unless it is the TrainJob pod webhook, only objects with a queue.
func checkWebhook(t *testing.T, config string, h map[string]any) {
	t.Helper()
	name := h["name"]
	svc, _, _ := unstructured.NestedStringMap(h, "clientConfig", "service")
	if svc["name"] != "pickyman-webhook-service" || svc["namespace"] != "pickyman-system" {
		t.Errorf("%s webhook %v calls Service %v", config, name, svc)
	}
	exprs, _, _ := unstructured.NestedSlice(h, "namespaceSelector", "matchExpressions")
	excluded := false
	for _, e := range exprs {
		m := e.(map[string]any)
		values, _, _ := unstructured.NestedStringSlice(m, "values")
		excluded = excluded || (m["key"] == "kubernetes.io/metadata.name" && m["operator"] == "NotIn" && slices.Contains(values, "kube-system"))
	}
	if !excluded {
		t.Errorf("%s webhook %v: namespaceSelector %v does not exclude kube-system", config, name, exprs)
	}
	if name == "mtrainjobpod.pickyman.dev" {
		return
	}
	if name == "vpytorchjobscale.pickyman.dev" {
		// A Scale carries none of its job's labels: this webhook has no object selector, so
		// it must see nothing but updates of the scale subresource (it reads the job to tell).
		rules, _, _ := unstructured.NestedSlice(h, "rules")
		for _, r := range rules {
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			ops, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "operations")
			if !slices.Equal(res, []string{"pytorchjobs/scale"}) || !slices.Equal(ops, []string{"UPDATE"}) {
				t.Errorf("%s webhook %v: rule for %v %v, want UPDATE of pytorchjobs/scale only", config, name, ops, res)
			}
		}
		if len(rules) == 0 {
			t.Errorf("%s webhook %v has no rules", config, name)
		}
		return
	}
	sel, _, _ := unstructured.NestedSlice(h, "objectSelector", "matchExpressions")
	queue := false
	for _, e := range sel {
		m := e.(map[string]any)
		queue = queue || (m["key"] == "pickyman.dev/queue" && m["operator"] == "Exists")
	}
	if !queue {
		t.Errorf("%s webhook %v: objectSelector %v does not require the pickyman.dev/queue label", config, name, sel)
	}
}

// TestCertManagerOverlay checks that the cert-manager overlay's references resolve: the
// Certificate's issuer, the Secret the operator reads, the CA injection annotations, and the
// operator told to take the certificate as it is.
func TestCertManagerOverlay(t *testing.T) {
	objs := rendered(t, filepath.Join("overlays", "cert-manager"))
	const ns = "pickyman-system"
	var certs []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Certificate" {
			certs = append(certs, o)
		}
	}
	if len(certs) != 1 {
		t.Fatalf("%d Certificates, want 1", len(certs))
	}
	c := certs[0]
	issuer, _, _ := unstructured.NestedStringMap(c.Object, "spec", "issuerRef")
	if objs[key(issuer["kind"], c.GetNamespace(), issuer["name"])] == nil {
		t.Errorf("Certificate %s is issued by %s %s, which the overlay does not create", c.GetName(), issuer["kind"], issuer["name"])
	}
	secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
	op := objs[key("Deployment", ns, "pickyman-operator")]
	if want := operatorSecret(t, op); secret != want {
		t.Errorf("Certificate writes Secret %s; the operator reads %s", secret, want)
	}
	dns, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
	if !slices.Contains(dns, "pickyman-webhook-service.pickyman-system.svc") {
		t.Errorf("Certificate DNS names %v lack the webhook Service's", dns)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		found := false
		for _, o := range objs {
			if o.GetKind() != kind {
				continue
			}
			found = true
			if got, want := o.GetAnnotations()["cert-manager.io/inject-ca-from"], c.GetNamespace()+"/"+c.GetName(); got != want {
				t.Errorf("%s inject-ca-from %q, want %q", o.GetName(), got, want)
			}
		}
		if !found {
			t.Errorf("no %s", kind)
		}
	}
	args := fmt.Sprint(containers(podSpec(t, op))[0]["args"])
	if !strings.HasSuffix(strings.TrimSuffix(args, "]"), "--webhook-certs=external") {
		t.Errorf("operator args %s: want --webhook-certs=external last", args)
	}
}

func TestImageEntry(t *testing.T) {
	cases := map[string]struct{ ref, want, err string }{
		"tag":           {ref: "ghcr.io/a/b:v1", want: "- name: \"x\"\n  newName: \"ghcr.io/a/b\"\n  newTag: \"v1\"\n"},
		"registry port": {ref: "localhost:5000/b:dev", want: "- name: \"x\"\n  newName: \"localhost:5000/b\"\n  newTag: \"dev\"\n"},
		"digest":        {ref: "b@sha256:ab", want: "- name: \"x\"\n  newName: \"b\"\n  digest: \"sha256:ab\"\n"},
		"no tag":        {ref: "localhost:5000/b", err: "no tag or digest"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := imageEntry("x", tc.ref)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// operatorSecret is the Secret the operator keeps its webhook certificate in: its
// --webhook-secret flag, or the flag's default.
func operatorSecret(t *testing.T, op *unstructured.Unstructured) string {
	t.Helper()
	secret := "pickyman-webhook-server-cert"
	for _, c := range containers(podSpec(t, op)) {
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--webhook-secret="); ok {
				secret = v
			}
		}
	}
	return secret
}

// TestInstallNamespaceReachesEveryReference: an install into another namespace (config/default's
// `namespace:` changed) names that namespace everywhere, the texts included: the agent's
// admission policies hold the service accounts of that namespace, and PickyMan's webhooks
// leave that namespace alone. Nothing names pickyman-system any more.
func TestInstallNamespaceReachesEveryReference(t *testing.T) {
	const ns = "ml-platform"
	dir := t.TempDir()
	src := filepath.Join("..", "..", "config")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(dir, "default", "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), "\nnamespace: pickyman-system\n", "\nnamespace: "+ns+"\n", 1)
	if changed == string(data) {
		t.Fatal("config/default/kustomization.yaml has no `namespace: pickyman-system` line")
	}
	if err := os.WriteFile(k, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(Options{Kustomization: filepath.Join(dir, "default"), Operator: testOperatorImage, Agent: testAgentImage})
	if err != nil {
		t.Fatal(err)
	}
	var policies, webhooks int
	for _, o := range objs {
		text, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), "pickyman-system") {
			t.Errorf("%s %s still names pickyman-system:\n%s", o.GetKind(), o.GetName(), text)
		}
		switch o.GetKind() {
		case "ValidatingAdmissionPolicy":
			policies++
			// Each policy names the agent; the annotations policy the operator too.
			want := []string{"system:serviceaccount:" + ns + ":pickyman-agent"}
			if o.GetName() == "pickyman-agent-annotations" {
				want = append(want, "system:serviceaccount:"+ns+":pickyman-operator")
			}
			for _, w := range want {
				if !strings.Contains(string(text), w) {
					t.Errorf("policy %s does not name %s:\n%s", o.GetName(), w, text)
				}
			}
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				webhooks++
				values := fmt.Sprint(h.(map[string]any)["namespaceSelector"])
				if !strings.Contains(values, ns) {
					t.Errorf("webhook %v does not leave %s alone: namespaceSelector %s", h.(map[string]any)["name"], ns, values)
				}
			}
		}
	}
	if policies != 3 || webhooks == 0 {
		t.Errorf("%d admission policies and %d webhooks rendered, want 3 and some", policies, webhooks)
	}
}

// TestImageTagsThatReadAsNumbers: a tag that YAML would read as a number (a commit hash of
// digits only, or of digits around one "e") installs that exact image; it was refused with
// "cannot unmarshal number into Go struct field Image.images.newTag".
func TestImageTagsThatReadAsNumbers(t *testing.T) {
	for _, tag := range []string{"5896011", "1234e56", "0x1F", "true"} {
		ref := "ghcr.io/pickyman/pickyman-operator:" + tag
		objs, err := Objects(Options{Kustomization: filepath.Join("..", "..", "config", "default"), Operator: ref, Agent: testAgentImage})
		if err != nil {
			t.Fatalf("tag %s: %v", tag, err)
		}
		found := false
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			for _, c := range containers(podSpec(t, o)) {
				found = true
				if c["image"] != ref {
					t.Errorf("tag %s: the operator runs %v, want %s", tag, c["image"], ref)
				}
			}
		}
		if !found {
			t.Fatalf("tag %s: no operator container rendered", tag)
		}
	}
}
