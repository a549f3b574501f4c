package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
)

// PickyMan's components on the testbed: the operator and the agent in testbed mode run as
// local processes, each authenticated as its own ServiceAccount with the RBAC that the
// manifests install (a token, not the admin kubeconfig), so a missing or excessive permission
// shows up in the tests.
const (
	// PickyManNamespace is where config/default and config/agent put the ServiceAccounts.
	PickyManNamespace = "pickyman-system"
	// OperatorServiceAccount and AgentServiceAccount are their names after the name prefix.
	OperatorServiceAccount = "pickyman-operator"
	AgentServiceAccount    = "pickyman-agent"

	mutatingWebhookConfig   = "pickyman-mutating-webhook-configuration"
	validatingWebhookConfig = "pickyman-validating-webhook-configuration"
	tokenLifetime           = 7 * 24 * time.Hour
)

// PickyMan says how the testbed runs the operator and the agent.
type PickyMan struct {
	// Config is the operator's configuration; the testbed fills in the manager's addresses,
	// the leader-election namespace and the webhook certificate directory.
	Config *configv1.Configuration
	// TimeScale is the agent's trace seconds per real second.
	TimeScale float64
	// Seed of the agent's per-job noise.
	Seed int64
	// NodeSelector selects the nodes the testbed agent serves (default type=kwok).
	NodeSelector string
	// Installed runs them as installed (installed.go): pods on the real node from the images
	// of `make images`, applied with the installer; otherwise they are local processes.
	Installed bool
	// Kubeconfig is the cluster where PickyMan is installed when the testbed did not bring it
	// up (kind: its images loaded into the nodes by `make kind-up`); empty for the testbed's
	// own cluster.
	Kubeconfig string
}

// pickymanKubeconfig is the kubeconfig of the cluster PickyMan runs on.
func (o Options) pickymanKubeconfig() string {
	if o.PickyMan != nil && o.PickyMan.Kubeconfig != "" {
		return o.PickyMan.Kubeconfig
	}
	return o.Kubeconfig()
}

// installed says whether PickyMan runs as installed pods.
func (o Options) installed() bool { return o.PickyMan != nil && o.PickyMan.Installed }

// Component names, as in logs, pid files and errors.
const (
	ComponentOperator = "pickyman-operator"
	ComponentAgent    = "pickyman-testbed-agent"
)

func (o Options) componentFile(component, ext string) string {
	return filepath.Join(o.Workdir(), component+"."+ext)
}

// ComponentLog is the log file of a PickyMan component.
func (o Options) ComponentLog(component string) string { return o.componentFile(component, "log") }

// ComponentPid is the pid of a running PickyMan component, or 0.
func (o Options) ComponentPid(component string) int {
	if o.installed() {
		return o.installedRunning(component)
	}
	if pid := readPid(o.componentFile(component, "pid")); alive(pid) {
		return pid
	}
	return 0
}

// AgentMetricsURL is the testbed agent's Prometheus endpoint.
func (o Options) AgentMetricsURL() string {
	if o.installed() {
		return o.installedAgentMetricsURL()
	}
	return "http://" + strings.TrimSpace(readFile(o.componentFile(ComponentAgent, "addr"))) + "/metrics"
}

// OperatorMetricsURL is the operator's Prometheus endpoint.
func (o Options) OperatorMetricsURL() string {
	return "http://" + strings.TrimSpace(readFile(o.componentFile(ComponentOperator, "metrics"))) + "/metrics"
}

// OperatorMetricsURLs are the Prometheus endpoints of every operator replica (the installed
// Deployment runs two; only the leader schedules), or the local process's.
func (o Options) OperatorMetricsURLs(ctx context.Context) ([]string, error) {
	if !o.installed() {
		return []string{o.OperatorMetricsURL()}, nil
	}
	return o.installedMetricsURLs(ctx, ComponentOperator, "8080")
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// DeployPickyMan applies PickyMan's manifests, issues the ServiceAccount tokens and starts
// the operator and the agent unless they run. It is idempotent.
func (o Options) DeployPickyMan(ctx context.Context, c *Clients) error {
	if o.PickyMan == nil {
		return errors.New("no PickyMan options")
	}
	if o.installed() {
		return o.InstallPickyMan(ctx, c)
	}
	for _, b := range []string{ComponentOperator, ComponentAgent} {
		if _, err := os.Stat(o.Binary(b)); err != nil {
			return fmt.Errorf("missing binary %s (run `make build`)", o.Binary(b))
		}
	}
	// The webhook port is fixed for the cluster's life: the webhook configurations name it.
	portFile := o.componentFile(ComponentOperator, "webhook")
	port, _ := strconv.Atoi(strings.TrimSpace(readFile(portFile)))
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		port = p
		if err := os.WriteFile(portFile, []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
			return err
		}
	}
	objs, err := testbedManifests(o.ConfigDir, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, objs, o.Timeout); err != nil {
		return fmt.Errorf("apply PickyMan manifests: %w", err)
	}
	for component, sa := range map[string]string{ComponentOperator: OperatorServiceAccount, ComponentAgent: AgentServiceAccount} {
		if err := c.writeServiceAccountKubeconfig(ctx, sa, o.componentFile(component, "kubeconfig")); err != nil {
			return fmt.Errorf("component %s: %w", component, err)
		}
	}
	if err := o.StartOperator(ctx, c); err != nil {
		return err
	}
	return o.StartAgent(ctx)
}

// writeServiceAccountKubeconfig requests a token for the ServiceAccount and writes a
// kubeconfig that uses it against this cluster.
func (c *Clients) writeServiceAccountKubeconfig(ctx context.Context, sa, path string) error {
	tr, err := c.Kube.CoreV1().ServiceAccounts(PickyManNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", PickyManNamespace, sa, err)
	}
	ca := c.Config.CAData
	if len(ca) == 0 && c.Config.CAFile != "" {
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			return err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testbed"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: sa, Namespace: PickyManNamespace}
	kc.CurrentContext = sa
	return clientcmd.WriteToFile(*kc, path)
}

// operatorConfig is the operator's configuration with the testbed's addresses filled in.
func (o Options) operatorConfig(metrics, health, webhook int) ([]byte, error) {
	conf := o.PickyMan.Config
	if conf == nil {
		conf = &configv1.Configuration{}
	}
	conf = conf.DeepCopy()
	conf.APIVersion, conf.Kind = "config.pickyman.dev/v1alpha1", "Configuration"
	conf.Manager.MetricsBindAddress = "127.0.0.1:" + strconv.Itoa(metrics)
	conf.Manager.HealthProbeBindAddress = "127.0.0.1:" + strconv.Itoa(health)
	conf.Manager.WebhookPort = webhook
	conf.Manager.WebhookCertDir = filepath.Join(o.Workdir(), ComponentOperator+"-certs")
	conf.Manager.LeaderElection = ptr.To(true)
	conf.Manager.LeaderElectionNamespace = PickyManNamespace
	return yaml.Marshal(conf)
}

// StartOperator starts the operator unless it runs, and waits until it is ready and its
// webhooks carry its CA.
func (o Options) StartOperator(ctx context.Context, c *Clients) error {
	if o.installed() {
		return o.startInstalledOperator(ctx, c)
	}
	if o.ComponentPid(ComponentOperator) > 0 {
		return nil
	}
	return o.retryBind(ComponentOperator, func() error { return o.startOperator(ctx, c) })
}

// bindAttempts bounds retryBind.
const bindAttempts = 3

// retryBind runs start again, up to bindAttempts times, while the component exits because
// one of its ports was taken between the choice of the port and the component's bind (a
// free port can become the source port of any outgoing connection meanwhile). Any other
// failure is returned at once.
func (o Options) retryBind(component string, start func() error) error {
	return o.retryBindLog(component, o.ComponentLog(component), start)
}

// retryBindLog is retryBind for a component that logs to log.
func (o Options) retryBindLog(component, log string, start func() error) error {
	var err error
	for attempt := 1; attempt <= bindAttempts; attempt++ {
		var from int64
		if fi, serr := os.Stat(log); serr == nil {
			from = fi.Size()
		}
		if err = start(); err == nil || !errors.Is(err, errNotRunning) || !addressInUse(log, from) {
			return err
		}
		fmt.Fprintf(os.Stderr, "testbed: %s could not bind a port (attempt %d of %d); starting it again\n", component, attempt, bindAttempts)
	}
	return err
}

// addressInUse says whether the log, from offset on, reports a failed bind.
func addressInUse(log string, from int64) bool {
	b := []byte(readFile(log))
	if from > int64(len(b)) {
		from = 0
	}
	return bytes.Contains(b[from:], []byte("address already in use"))
}

func (o Options) startOperator(ctx context.Context, c *Clients) error {
	webhook, _ := strconv.Atoi(strings.TrimSpace(readFile(o.componentFile(ComponentOperator, "webhook"))))
	metrics, err := freePort()
	if err != nil {
		return err
	}
	health, err := freePort()
	if err != nil {
		return err
	}
	conf, err := o.operatorConfig(metrics, health, webhook)
	if err != nil {
		return err
	}
	confPath := o.componentFile(ComponentOperator, "yaml")
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(o.componentFile(ComponentOperator, "metrics"), []byte(fmt.Sprintf("127.0.0.1:%d\n", metrics)), 0o644); err != nil {
		return err
	}
	args := []string{"--config", confPath, "--webhook-certs=self-signed", "--webhook-host", "127.0.0.1",
		"--webhook-namespace", PickyManNamespace}
	env := []string{"KUBECONFIG=" + o.componentFile(ComponentOperator, "kubeconfig")}
	pid, err := startDetached(o.Binary(ComponentOperator), args, env, o.ComponentLog(ComponentOperator), o.componentFile(ComponentOperator, "pid"))
	if err != nil {
		return fmt.Errorf("component %s failed to start: %w (log: %s)", ComponentOperator, err, o.ComponentLog(ComponentOperator))
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", health)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		if !alive(pid) {
			return false, errNotRunning
		}
		if !httpOK(url) {
			return false, nil
		}
		return c.webhookServesInjectedCA(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(webhook)))
	})
	if err != nil {
		return fmt.Errorf("component %s not ready (%w); log: %s\n%s", ComponentOperator, err,
			o.ComponentLog(ComponentOperator), tail(readFile(o.ComponentLog(ComponentOperator)), 15))
	}
	return nil
}

// webhookServesInjectedCA says whether both webhook configurations carry a CA and the
// webhook server at addr presents a certificate that this CA verifies: the CA is new on every
// start of the operator, so a CA left by an earlier process does not pass.
func (c *Clients) webhookServesInjectedCA(ctx context.Context, addr string) (bool, error) {
	m, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mutatingWebhookConfig, metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	v, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, validatingWebhookConfig, metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	var bundles [][]byte
	for _, h := range m.Webhooks {
		bundles = append(bundles, h.ClientConfig.CABundle)
	}
	for _, h := range v.Webhooks {
		bundles = append(bundles, h.ClientConfig.CABundle)
	}
	if len(bundles) == 0 {
		return false, nil
	}
	for _, b := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return false, nil
		}
		host, _, _ := net.SplitHostPort(addr)
		d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
	}
	return true, nil
}

// StartAgent starts the testbed agent unless it runs, and waits until it serves metrics.
func (o Options) StartAgent(ctx context.Context) error {
	if o.installed() {
		c, err := NewClients(o.pickymanKubeconfig())
		if err != nil {
			return err
		}
		return o.WaitPickyManReady(ctx, c)
	}
	if o.ComponentPid(ComponentAgent) > 0 {
		return nil
	}
	return o.retryBind(ComponentAgent, func() error { return o.startAgent(ctx) })
}

func (o Options) startAgent(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := o.testbedAgentArgs(addr)
	env := []string{"KUBECONFIG=" + o.componentFile(ComponentAgent, "kubeconfig")}
	if err := os.WriteFile(o.componentFile(ComponentAgent, "addr"), []byte(addr+"\n"), 0o644); err != nil {
		return err
	}
	pid, err := startDetached(o.Binary(ComponentAgent), args, env, o.ComponentLog(ComponentAgent), o.componentFile(ComponentAgent, "pid"))
	if err != nil {
		return fmt.Errorf("component %s failed to start: %w (log: %s)", ComponentAgent, err, o.ComponentLog(ComponentAgent))
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		if !alive(pid) {
			return false, errNotRunning
		}
		return httpOK("http://" + addr + "/healthz"), nil
	})
	if err != nil {
		return fmt.Errorf("component %s not ready (%w); log: %s\n%s", ComponentAgent, err,
			o.ComponentLog(ComponentAgent), tail(readFile(o.ComponentLog(ComponentAgent)), 15))
	}
	return nil
}

// StopComponent stops a PickyMan component, or the training-operator
// (ComponentTrainingOperator, a local process in every mode): SIGKILL when kill is set (a
// crash), otherwise SIGTERM with a grace period (a shutdown).
func (o Options) StopComponent(component string, kill bool) error {
	var pid int
	switch {
	case component == ComponentTrainingOperator:
		pid = readPid(o.operatorPid())
	case o.installed():
		return o.stopInstalledComponent(component, kill)
	default:
		pid = o.ComponentPid(component)
	}
	if kill {
		// A crash test that killed nothing would pass for the wrong reason.
		if !alive(pid) {
			return fmt.Errorf("kill %s: it is not running", component)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return stopPid(pid, 5*time.Second)
	}
	if pid == 0 {
		return nil
	}
	return stopPid(pid, 30*time.Second)
}

func httpOK(url string) bool {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url) //nolint:noctx // a loopback probe inside a poll with its own deadline
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
