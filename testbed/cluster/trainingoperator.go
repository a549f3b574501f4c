package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// What the training-operator v1.8.1 expects of the cluster before it starts its job
// controllers (docs/testbed.md).
const (
	TrainingOperatorNamespace = "kubeflow"
	webhookSecretName         = "training-operator-webhook-cert"
	webhookConfigName         = "validator.training-operator.kubeflow.org"
	webhookServiceName        = "training-operator"
	// WebhookCertDir is fixed in the training-operator; a pod would mount the Secret there.
	WebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// ComponentTrainingOperator names the training-operator for StopComponent and
	// StartTrainingOperator.
	ComponentTrainingOperator = "training-operator"
)

func (o Options) operatorLog() string  { return filepath.Join(o.Workdir(), "training-operator.log") }
func (o Options) operatorPid() string  { return filepath.Join(o.Workdir(), "training-operator.pid") }
func (o Options) operatorPort() string { return filepath.Join(o.Workdir(), "training-operator.port") }

// prepareTrainingOperator creates the namespace, the webhook Secret with a CA and serving
// certificate, an empty ValidatingWebhookConfiguration (its real webhook points at a Service
// the API server cannot reach here), and writes the Secret's files to WebhookCertDir.
func prepareTrainingOperator(ctx context.Context, c *Clients) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TrainingOperatorNamespace}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", TrainingOperatorNamespace, err)
	}
	secret, err := c.Kube.CoreV1().Secrets(TrainingOperatorNamespace).Get(ctx, webhookSecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		certs, cerr := newWebhookCerts(fmt.Sprintf("%s.%s.svc", webhookServiceName, TrainingOperatorNamespace), time.Now())
		if cerr != nil {
			return cerr
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: webhookSecretName, Namespace: TrainingOperatorNamespace},
			Data:       certs.Data(),
		}
		secret, err = c.Kube.CoreV1().Secrets(TrainingOperatorNamespace).Create(ctx, secret, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", TrainingOperatorNamespace, webhookSecretName, err)
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfigName}}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("validatingwebhookconfiguration %s: %w", webhookConfigName, err)
	}
	if err := os.MkdirAll(WebhookCertDir, 0o755); err != nil {
		return err
	}
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(WebhookCertDir, k), secret.Data[k], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startTrainingOperator starts the training-operator as a local process unless it runs
// already, and waits until its health endpoint answers. Its log is in the workdir.
func (o Options) startTrainingOperator(ctx context.Context) (started bool, err error) {
	if pid := readPid(o.operatorPid()); alive(pid) {
		return false, nil
	}
	probe, err := freePort()
	if err != nil {
		return false, err
	}
	webhook, err := freePort()
	if err != nil {
		return false, err
	}
	// The log is appended to across restarts: readiness reads what this process wrote.
	var from int64
	if st, err := os.Stat(o.operatorLog()); err == nil {
		from = st.Size()
	}
	args := []string{
		"--kubeconfig", o.Kubeconfig(),
		"--enable-scheme", "pytorchjob",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe),
		"--webhook-server-port", strconv.Itoa(webhook),
	}
	pid, err := startDetached(o.Binary("training-operator"), args, []string{"MY_POD_NAMESPACE=" + TrainingOperatorNamespace},
		o.operatorLog(), o.operatorPid())
	if err != nil {
		return false, fmt.Errorf("component training-operator failed to start: %w (log: %s)", err, o.operatorLog())
	}
	if err := os.WriteFile(o.operatorPort(), []byte(strconv.Itoa(probe)+"\n"), 0o644); err != nil {
		return true, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		if !alive(pid) {
			return false, errNotRunning
		}
		resp, err := http.Get(url) //nolint:noctx // a loopback probe with the poll's own deadline
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && o.operatorControllersStarted(from), nil
	})
	if err != nil {
		data, _ := os.ReadFile(o.operatorLog())
		return true, fmt.Errorf("component training-operator failed (%v); log: %s\n%s", err, o.operatorLog(), tail(string(data), 15))
	}
	return true, nil
}

// operatorControllersStarted says whether the training-operator's log, from byte from on,
// shows its PyTorchJob workers running: it starts them only after the webhook certificates
// are in place.
func (o Options) operatorControllersStarted(from int64) bool {
	data, err := os.ReadFile(o.operatorLog())
	if err != nil || int64(len(data)) < from {
		return false
	}
	data = data[from:]
	return strings.Contains(string(data), "Starting workers") && strings.Contains(string(data), "pytorchjob")
}

// StartTrainingOperator starts the training-operator again after StopComponent stopped it
// (a crash or a restart in a chaos test), and waits until its PyTorchJob workers run.
func (o Options) StartTrainingOperator(ctx context.Context) error {
	_, err := o.startTrainingOperator(ctx)
	return err
}
