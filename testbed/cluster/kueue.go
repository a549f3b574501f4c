package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Kueue in the testbed: Kueue's controller manager (tools/kueue builds sigs.k8s.io/kueue's
// cmd/kueue, unmodified, into bin/kueue-manager) runs as a local process with the admin
// kubeconfig, on request (Options.Kueue). Its CRDs and webhook configurations come from the
// same module source (bin/kueue/crds, bin/kueue/webhook). The manager's own certificate
// management expects a Service in front of a pod; here the API server calls the webhooks on
// localhost instead, so the testbed issues the serving certificate (certs.go), writes it to
// the manager's certificate directory, and installs Kueue's webhook configurations with a URL
// on localhost and the CA bundle in place of the Service.
const (
	// KueueComponent names Kueue's controller manager in logs, pid files and errors.
	KueueComponent = "kueue-manager"
	// KueueNamespace is Kueue's own namespace.
	KueueNamespace = "kueue-system"
	// kueueFramework is the only job integration the testbed enables: Kueue manages the
	// PyTorchJobs that name a LocalQueue, and nothing else.
	kueueFramework     = "kubeflow.org/pytorchjob"
	kueueWebhookPrefix = "kueue-"
	// KueueMetricsCertDir is fixed in Kueue's main when its internal certificate management
	// is off (a pod would mount a Secret there); the testbed serves no metrics from it but
	// the manager will not start without a certificate there.
	KueueMetricsCertDir = "/etc/kueue/metrics/certs"
)

func (o Options) kueueLog() string     { return filepath.Join(o.Workdir(), KueueComponent+".log") }
func (o Options) kueuePid() string     { return filepath.Join(o.Workdir(), KueueComponent+".pid") }
func (o Options) kueueConfig() string  { return filepath.Join(o.Workdir(), "kueue-config.yaml") }
func (o Options) kueueCertDir() string { return filepath.Join(o.Workdir(), "kueue-certs") }

// KueueConfig is the controller manager's configuration for the testbed: no leader election
// (one replica), health probes and webhooks on the given loopback ports, the testbed's
// certificates, no internal certificate management, only the PyTorchJob integration, and
// jobs without a queue name left alone (PickyMan's, if any).
func KueueConfig(probe, webhook int, certDir string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - %q
`, KueueNamespace, probe, webhook, certDir, kueueFramework))
}

// KueueWebhooks reads Kueue's webhook configurations (the module's manifests.yaml) and keeps
// the webhooks of Kueue's own objects and of PyTorchJobs (the integrations the testbed does
// not enable serve nothing), each called at url+path with caBundle; the configurations'
// names get Kueue's kustomize prefix.
func KueueWebhooks(manifests []byte, url string, caBundle []byte) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	var muts []*admissionv1.MutatingWebhookConfiguration
	var vals []*admissionv1.ValidatingWebhookConfiguration
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	for {
		doc, err := dec.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		var head metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, nil, err
		}
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, m); err != nil {
				return nil, nil, err
			}
			m.Name = kueueWebhookPrefix + m.Name
			m.Webhooks = slices.DeleteFunc(m.Webhooks, func(w admissionv1.MutatingWebhook) bool { return !kueueServes(w.Rules) })
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig = localClientConfig(m.Webhooks[i].ClientConfig, url, caBundle)
			}
			muts = append(muts, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, v); err != nil {
				return nil, nil, err
			}
			v.Name = kueueWebhookPrefix + v.Name
			v.Webhooks = slices.DeleteFunc(v.Webhooks, func(w admissionv1.ValidatingWebhook) bool { return !kueueServes(w.Rules) })
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig = localClientConfig(v.Webhooks[i].ClientConfig, url, caBundle)
			}
			vals = append(vals, v)
		case "":
		default:
			return nil, nil, fmt.Errorf("kueue webhook manifests: unexpected kind %s", head.Kind)
		}
	}
	if len(muts) == 0 || len(vals) == 0 {
		return nil, nil, fmt.Errorf("kueue webhook manifests: want a mutating and a validating configuration, got %d and %d", len(muts), len(vals))
	}
	return muts, vals, nil
}

// kueueServes says whether the testbed's Kueue serves a webhook of these rules: Kueue's own
// objects, and PyTorchJobs.
func kueueServes(rules []admissionv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if g == "kueue.x-k8s.io" {
				return true
			}
			if g == "kubeflow.org" && slices.Contains(r.Resources, "pytorchjobs") {
				return true
			}
		}
	}
	return false
}

func localClientConfig(cc admissionv1.WebhookClientConfig, url string, caBundle []byte) admissionv1.WebhookClientConfig {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	u := url + path
	return admissionv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
}

// KueueRunning says whether the testbed's Kueue controller manager runs.
func (o Options) KueueRunning() bool { return alive(readPid(o.kueuePid())) }

// startKueue installs Kueue's CRDs, its namespace, the serving certificate and the webhook
// configurations, and starts the controller manager unless it runs; it waits until the
// manager is ready and its Workload controller runs.
func (o Options) startKueue(ctx context.Context, c *Clients) error {
	if o.KueueRunning() {
		return nil
	}
	if _, err := c.ApplyCRDs(ctx, filepath.Join(o.KueueDir, "crds"), o.Timeout); err != nil {
		return fmt.Errorf("component %s: CRDs: %w", KueueComponent, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", KueueNamespace, err)
	}
	certs, err := newWebhookCerts("localhost", time.Now())
	if err != nil {
		return err
	}
	for _, dir := range []string{o.kueueCertDir(), KueueMetricsCertDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("component %s: %w", KueueComponent, err)
		}
		for name, data := range map[string][]byte{"tls.crt": certs.Cert, "tls.key": certs.Key} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return fmt.Errorf("component %s: %w", KueueComponent, err)
			}
		}
	}
	manifests, err := os.ReadFile(filepath.Join(o.KueueDir, "webhook", "manifests.yaml"))
	if err != nil {
		return fmt.Errorf("component %s: %w (run `make tools`)", KueueComponent, err)
	}
	return o.retryBindLog(KueueComponent, o.kueueLog(), func() error {
		probe, err := freePort()
		if err != nil {
			return err
		}
		webhook, err := freePort()
		if err != nil {
			return err
		}
		visibility, err := freePort()
		if err != nil {
			return err
		}
		muts, vals, err := KueueWebhooks(manifests, "https://localhost:"+strconv.Itoa(webhook), certs.CACert)
		if err != nil {
			return err
		}
		if err := applyWebhooks(ctx, c, muts, vals); err != nil {
			return fmt.Errorf("component %s: %w", KueueComponent, err)
		}
		if err := os.WriteFile(o.kueueConfig(), KueueConfig(probe, webhook, o.kueueCertDir()), 0o644); err != nil {
			return err
		}
		from := int64(0)
		if st, err := os.Stat(o.kueueLog()); err == nil {
			from = st.Size()
		}
		args := []string{"--kubeconfig", o.Kubeconfig(), "--config", o.kueueConfig(),
			"--visibility-server-port", strconv.Itoa(visibility), "--feature-gates", "VisibilityOnDemand=false",
			"--zap-log-level", "2"}
		pid, err := startDetached(o.Binary(KueueComponent), args, nil, o.kueueLog(), o.kueuePid())
		if err != nil {
			return fmt.Errorf("component %s failed to start: %w (log: %s)", KueueComponent, err, o.kueueLog())
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
			if !alive(pid) {
				return false, errNotRunning
			}
			return httpOK(url) && kueueStarted(readFile(o.kueueLog()), from), nil
		})
		if err != nil {
			return fmt.Errorf("component %s not ready (%w); log: %s\n%s", KueueComponent, err, o.kueueLog(), tail(readFile(o.kueueLog()), 15))
		}
		return nil
	})
}

// kueueStarted says whether the log, from byte from on, shows the workers of Kueue's
// Workload controller and of its PyTorchJob reconciler.
func kueueStarted(log string, from int64) bool {
	if int64(len(log)) < from {
		return false
	}
	log = log[from:]
	var workload, pytorch bool
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "Starting workers") {
			continue
		}
		workload = workload || strings.Contains(line, `"logger":"workload-reconciler"`)
		pytorch = pytorch || strings.Contains(line, `"logger":"pytorchjob"`)
	}
	return workload && pytorch
}

// applyWebhooks creates or replaces the webhook configurations.
func applyWebhooks(ctx context.Context, c *Clients, muts []*admissionv1.MutatingWebhookConfiguration, vals []*admissionv1.ValidatingWebhookConfiguration) error {
	api := c.Kube.AdmissionregistrationV1()
	for _, m := range muts {
		old, err := api.MutatingWebhookConfigurations().Get(ctx, m.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{})
		case err == nil:
			m.ResourceVersion = old.ResourceVersion
			_, err = api.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("mutatingwebhookconfiguration %s: %w", m.Name, err)
		}
	}
	for _, v := range vals {
		old, err := api.ValidatingWebhookConfigurations().Get(ctx, v.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{})
		case err == nil:
			v.ResourceVersion = old.ResourceVersion
			_, err = api.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("validatingwebhookconfiguration %s: %w", v.Name, err)
		}
	}
	return nil
}

// Names of Kueue's webhook configurations as the testbed installs them (KueueWebhooks).
const (
	KueueMutatingWebhooks   = kueueWebhookPrefix + "mutating-webhook-configuration"
	KueueValidatingWebhooks = kueueWebhookPrefix + "validating-webhook-configuration"
)

// StartKueue installs Kueue and starts its controller manager on a running testbed cluster
// (what Up does with Options.Kueue); it fails if bin/kueue-manager is missing.
func (o Options) StartKueue(ctx context.Context, c *Clients) error {
	if _, err := os.Stat(o.Binary(KueueComponent)); err != nil {
		return fmt.Errorf("missing binary %s (run `make tools`)", o.Binary(KueueComponent))
	}
	return o.startKueue(ctx, c)
}

// StopKueue stops Kueue's controller manager and removes its webhook configurations, so that
// the API server no longer calls it; its CRDs and objects stay.
func (o Options) StopKueue(ctx context.Context, c *Clients) error {
	if pid := readPid(o.kueuePid()); alive(pid) {
		if err := stopPid(pid, 10*time.Second); err != nil {
			return fmt.Errorf("stop %s: %w", KueueComponent, err)
		}
	}
	api := c.Kube.AdmissionregistrationV1()
	if err := api.MutatingWebhookConfigurations().Delete(ctx, KueueMutatingWebhooks, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := api.ValidatingWebhookConfigurations().Delete(ctx, KueueValidatingWebhooks, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
