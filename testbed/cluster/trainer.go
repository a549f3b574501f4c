package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// TrainJobs in the testbed: JobSet's controller (tools/jobset) and the Kubeflow Trainer v2
// controller (tools/trainer), each the upstream controllers and webhooks unmodified around a
// main of the testbed's, run as local processes with the admin kubeconfig; their CRDs come from
// the same module sources (bin/jobset-crds, bin/trainer-crds). The Trainer turns a TrainJob
// and its training runtime into a JobSet, JobSet turns that into Jobs, and the cluster's Job
// controller makes the pods, which the testbed agent trains as any other kind's.
//
// Webhooks: both serve theirs on 127.0.0.1, with a serving certificate the testbed makes
// (for 127.0.0.1) and writes to a directory of the cluster's own; the testbed points a webhook
// configuration of its own at each process (url, caBundle), with the upstream paths. The
// upstream mains would rotate a certificate for an in-cluster Service name, which the API
// server, a local process, cannot reach, into the directory the training-operator reads.
const (
	JobSetComponent  = "jobset-controller"
	TrainerComponent = "trainer-controller-manager"
	// TrainerRuntime is the ClusterTrainingRuntime for PyTorch that the testbed installs: one
	// node by default, no GPUs of its own (a TrainJob or a runtime of its own sets them).
	TrainerRuntime = "torch-distributed"
	// trainerWebhookPrefix names the testbed's webhook configurations of both.
	trainerWebhookPrefix = "pickyman-testbed-"
)

// The webhooks of JobSet v0.8.2 (config/components/webhook/manifests.yaml) and of the
// Trainer v2.0.0 (manifests/base/webhook/manifests.yaml): path, group, version, resource, and
// whether it mutates.
var trainerWebhooks = map[string][]struct {
	name, path, group, version, resource string
	mutating                             bool
}{
	JobSetComponent: {
		{"mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset", "jobset.x-k8s.io", "v1alpha2", "jobsets", true},
		{"vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset", "jobset.x-k8s.io", "v1alpha2", "jobsets", false},
		{"mpod.kb.io", "/mutate--v1-pod", "", "v1", "pods", true},
		{"vpod.kb.io", "/validate--v1-pod", "", "v1", "pods", false},
	},
	TrainerComponent: {
		{"validator.clustertrainingruntime.trainer.kubeflow.org", "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime", "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", false},
		{"validator.trainingruntime.trainer.kubeflow.org", "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime", "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", false},
		{"validator.trainjob.trainer.kubeflow.org", "/validate-trainer-kubeflow-org-v1alpha1-trainjob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", false},
	},
}

// trainerPid is the pid file of JobSet's or the Trainer's process: in kwokctl's pids/
// directory, where Down and status read every process of the cluster (Down stops these two
// before the control plane).
func (o Options) trainerPid(component string) string {
	return filepath.Join(o.Workdir(), "pids", component+".pid")
}
func (o Options) trainerLog(component string) string {
	return filepath.Join(o.Workdir(), component+".log")
}
func (o Options) trainerCertDir(component string) string {
	return filepath.Join(o.Workdir(), component+"-certs")
}

// startTrainer installs the CRDs of JobSet and the Trainer, starts both controllers with their
// webhooks, and installs the PyTorch ClusterTrainingRuntime.
func (o Options) startTrainer(ctx context.Context, c *Clients) error {
	for _, dir := range []string{o.JobSetCRDDir, o.TrainerCRDDir} {
		if _, err := c.ApplyCRDs(ctx, dir, o.Timeout); err != nil {
			return err
		}
	}
	for _, comp := range []string{JobSetComponent, TrainerComponent} {
		if err := o.startTrainerComponent(ctx, c, comp); err != nil {
			return err
		}
	}
	return o.applyTrainerRuntime(ctx, c)
}

// startTrainerComponent starts JobSet's or the Trainer's controller unless it runs, waits
// until it is ready and its controllers run, and points the component's webhook
// configurations at it.
func (o Options) startTrainerComponent(ctx context.Context, c *Clients, comp string) error {
	if pid := readPid(o.trainerPid(comp)); alive(pid) {
		return nil
	}
	certs, err := newWebhookCerts("localhost", time.Now(), net.IPv4(127, 0, 0, 1))
	if err != nil {
		return err
	}
	dir := o.trainerCertDir(comp)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": certs.Cert, "tls.key": certs.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.trainerPid(comp)), 0o755); err != nil {
		return err
	}
	var webhookPort int
	err = o.retryBindLog(comp, o.trainerLog(comp), func() error {
		var from int64
		if st, err := os.Stat(o.trainerLog(comp)); err == nil {
			from = st.Size()
		}
		probe, err := freePort()
		if err != nil {
			return err
		}
		if webhookPort, err = freePort(); err != nil {
			return err
		}
		args := []string{"--kubeconfig", o.Kubeconfig(), "--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe),
			"--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(webhookPort), "--cert-dir", dir}
		pid, err := startDetached(o.Binary(comp), args, nil, o.trainerLog(comp), o.trainerPid(comp))
		if err != nil {
			return fmt.Errorf("component %s failed to start: %w (log: %s)", comp, err, o.trainerLog(comp))
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
			if !alive(pid) {
				return false, errNotRunning
			}
			return httpOK(url) && o.trainerControllersStarted(comp, from), nil
		})
		if err != nil {
			return fmt.Errorf("component %s not ready (%w); log: %s\n%s", comp, err, o.trainerLog(comp), tail(readFile(o.trainerLog(comp)), 15))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := applyTrainerWebhooks(ctx, c, comp, net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)), certs.CACert); err != nil {
		return fmt.Errorf("component %s: %w", comp, err)
	}
	return nil
}

// trainerControllersStarted says whether the component's log, from byte from on, shows its
// main controller's workers: JobSet's, or the Trainer's TrainJob controller's.
func (o Options) trainerControllersStarted(comp string, from int64) bool {
	data := readFile(o.trainerLog(comp))
	if int64(len(data)) < from {
		return false
	}
	want := `"controller": "jobset"`
	if comp == TrainerComponent {
		want = `"controller": "trainjob_controller"`
	}
	for _, line := range strings.Split(data[from:], "\n") {
		if strings.Contains(line, "Starting workers") && strings.Contains(strings.ReplaceAll(line, `":"`, `": "`), want) {
			return true
		}
	}
	return false
}

// applyTrainerWebhooks creates or updates the component's mutating and validating webhook
// configurations, pointed at addr with caBundle. JobSet's pod webhooks see only the pods of a
// JobSet.
func applyTrainerWebhooks(ctx context.Context, c *Clients, comp, addr string, caBundle []byte) error {
	var mutating []admissionv1.MutatingWebhook
	var validating []admissionv1.ValidatingWebhook
	for _, w := range trainerWebhooks[comp] {
		url := "https://" + addr + w.path
		cc := admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
		rules := []admissionv1.RuleWithOperations{{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: []string{w.group}, APIVersions: []string{w.version}, Resources: []string{w.resource}},
		}}
		var sel *metav1.LabelSelector
		if w.resource == "pods" {
			rules[0].Operations = []admissionv1.OperationType{admissionv1.Create}
			sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "jobset.sigs.k8s.io/jobset-name", Operator: metav1.LabelSelectorOpExists}}}
		}
		side := admissionv1.SideEffectClassNone
		fail := admissionv1.Fail
		if w.mutating {
			mutating = append(mutating, admissionv1.MutatingWebhook{Name: w.name, ClientConfig: cc, Rules: rules, ObjectSelector: sel,
				SideEffects: &side, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](10)})
		} else {
			validating = append(validating, admissionv1.ValidatingWebhook{Name: w.name, ClientConfig: cc, Rules: rules, ObjectSelector: sel,
				SideEffects: &side, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](10)})
		}
	}
	name := trainerWebhookPrefix + comp
	if len(mutating) > 0 {
		api := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
		cur, err := api.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: mutating}, metav1.CreateOptions{})
		case err == nil:
			cur.Webhooks = mutating
			_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("mutatingwebhookconfiguration %s: %w", name, err)
		}
	}
	api := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cur, err := api.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: validating}, metav1.CreateOptions{})
	case err == nil:
		cur.Webhooks = validating
		_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("validatingwebhookconfiguration %s: %w", name, err)
	}
	return nil
}

var clusterTrainingRuntimeGVR = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}

// TrainerRuntimeObject is the testbed's PyTorch ClusterTrainingRuntime: the Trainer's torch
// ML policy and one replicated job "node", the trainer step, whose container "node" trains
// (the testbed agent simulates it; the image is never pulled on a fake node).
func TrainerRuntimeObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "ClusterTrainingRuntime",
		"metadata":   map[string]any{"name": TrainerRuntime, "labels": map[string]any{"trainer.kubeflow.org/framework": "torch"}},
		"spec": map[string]any{
			"mlPolicy": map[string]any{"numNodes": int64(1), "torch": map[string]any{"numProcPerNode": "auto"}},
			"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "node",
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
					"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
						"containers": []any{map[string]any{"name": "node", "image": "pickyman.dev/fake-training:latest"}},
					}}},
				},
			}}}},
		},
	}}
}

// applyTrainerRuntime installs TrainerRuntimeObject through the Trainer's webhook, retrying
// while the API server does not yet reach it.
func (o Options) applyTrainerRuntime(ctx context.Context, c *Clients) error {
	obj := TrainerRuntimeObject()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		_, last = c.Dynamic.Resource(clusterTrainingRuntimeGVR).Apply(ctx, TrainerRuntime, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("clustertrainingruntime %s: %w (last: %v)", TrainerRuntime, err, last)
	}
	return nil
}
