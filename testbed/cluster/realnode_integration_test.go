//go:build realnode

package cluster

// The real-node test (make test-realnode; root, Debian's containerd, runc and CNI plugins,
// bin/ from make tools realnode-tools): a cluster with one kwok node and one real node; pods
// from an image archive imported into the real node's containerd read the API server through
// in-cluster config, the API server calls a webhook in a pod through its Service, a pod calls
// that pod through the Service's ClusterIP (kube-proxy); then everything is taken down and
// nothing of the real node may be left. A missing piece fails the test, never skips it.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

const (
	realNodeTestNS     = "realnode-test"
	probeImage         = "pickyman.local/nodeprobe:test"
	probeDenyLabel     = "pickyman.dev/nodeprobe" // nodeprobe.DenyLabel
	probePodName       = "nodeprobe-webhook"
	probeSvcName       = "nodeprobe"
	probeWebhookConfig = "nodeprobe.pickyman.dev"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// realNodeClusterOptions returns the options of a cluster named name with one real node of 8
// A100s and no training-operator or KubeRay, logging to t, changed by set; it fails t if a
// binary or a real node's dependency of those options is missing.
func realNodeClusterOptions(t *testing.T, name string, set ...func(*Options)) Options {
	t.Helper()
	o := DefaultOptions("")
	o.Name = name
	o.TrainingOperator, o.KubeRay = false, false
	pool, err := ParsePool("1x8:A100")
	if err != nil {
		t.Fatal(err)
	}
	o.Pools = []Pool{pool}
	o.RealNodes = 1
	o.Timeout = 3 * time.Minute
	o.Log = testLog{t}
	for _, f := range set {
		f(&o)
	}
	if missing := o.MissingBinaries(); len(missing) > 0 {
		t.Fatalf("missing binaries (run `make tools`; bin/pickyman: `make build-pickyman`): %s", strings.Join(missing, ", "))
	}
	if missing := o.MissingRealNodeDeps(); len(missing) > 0 {
		t.Fatalf("real nodes: missing %s", strings.Join(missing, ", "))
	}
	return o
}

func TestRealNode(t *testing.T) {
	o := realNodeClusterOptions(t, "rntest")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := Down(ctx, o); err != nil { // a run that was interrupted
		t.Fatalf("down before up: %v", err)
	}
	t.Cleanup(func() {
		start := time.Now()
		nodes := o.startedRealNodes()
		if err := Down(context.Background(), o); err != nil {
			t.Errorf("down: %v", err)
			return
		}
		t.Logf("down in %v", time.Since(start).Round(time.Millisecond))
		if left := o.realNodeLeftovers(nodes); len(left) > 0 {
			t.Errorf("left after down: %s", strings.Join(left, "; "))
		}
		if _, err := os.Stat(o.realRunRoot()); !os.IsNotExist(err) {
			t.Errorf("runtime directory %s left (%v)", o.realRunRoot(), err)
		}
	})

	start := time.Now()
	info, err := Up(ctx, o)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	for _, p := range info.Phases {
		t.Logf("phase %-14s %v", p.Phase, p.Took.Round(time.Millisecond))
	}
	t.Logf("up with a real node Ready in %v", time.Since(start).Round(time.Millisecond))
	c, err := NewClients(o.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	nodeName := o.RealNodeNames()[0]
	node, err := c.Kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[LabelType] == TypeKwok || node.Annotations[stages.FakeNodeAnnotation] != "" || node.Labels[RealNodeLabel] != "true" {
		t.Errorf("real node %s: labels %v, annotations %v", nodeName, node.Labels, node.Annotations)
	}
	t.Logf("node %s: %s, kubelet %s, runtime %s, addresses %v", nodeName, condition(node), node.Status.NodeInfo.KubeletVersion,
		node.Status.NodeInfo.ContainerRuntimeVersion, node.Status.Addresses)
	// The kubelet reports the node, not the kwok controller (which manages only fake nodes).
	if v := node.Status.NodeInfo.KubeletVersion; !strings.HasPrefix(v, "v1.") {
		t.Errorf("real node's kubelet version %q: is the kwok controller managing it?", v)
	}
	if rt := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "containerd://") {
		t.Errorf("real node's runtime %q", rt)
	}
	if err := c.WaitNodesReady(ctx, []string{BuildNodes(o.Pools)[0].Name}, time.Minute); err != nil {
		t.Errorf("kwok node: %v", err)
	}

	// Up again: nothing restarts.
	pids := o.realNodeProcessPids()
	if _, err := Up(ctx, o); err != nil {
		t.Fatalf("second up: %v", err)
	}
	for name, pid := range o.realNodeProcessPids() {
		if pids[name] != pid {
			t.Errorf("second up restarted %s (pid %d, was %d)", name, pid, pids[name])
		}
	}

	// The workload's image, from an archive.
	archive := buildProbeImage(t)
	istart := time.Now()
	if err := o.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s imported in %v", probeImage, time.Since(istart).Round(time.Millisecond))

	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: realNodeTestNS}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The webhook pod's certificate, for its Service's name.
	dns := fmt.Sprintf("%s.%s.svc", probeSvcName, realNodeTestNS)
	certs, err := newWebhookCerts(dns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nodeprobe-certs", Namespace: realNodeTestNS}, Data: certs.Data()}
	if _, err := c.Kube.CoreV1().Secrets(realNodeTestNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webhook := probePod(nodeName, probePodName, []string{"webhook", "--cert-dir", "/certs", "--port", "8443"})
	webhook.Labels = map[string]string{"app": probePodName}
	webhook.Spec.RestartPolicy = corev1.RestartPolicyAlways
	webhook.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}}
	webhook.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}}}
	createPod(ctx, t, c, webhook)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: probeSvcName, Namespace: realNodeTestNS},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": probePodName},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}}},
	}
	svc, err = c.Kube.CoreV1().Services(realNodeTestNS).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pstart := time.Now()
	waitPod(ctx, t, c, o, probePodName, 2*time.Minute, func(p *corev1.Pod) bool { return podReady(p) })
	t.Logf("webhook pod Ready in %v", time.Since(pstart).Round(time.Millisecond))
	wp, _ := c.Kube.CoreV1().Pods(realNodeTestNS).Get(ctx, probePodName, metav1.GetOptions{})
	t.Logf("webhook pod IP %s, Service %s ClusterIP %s", wp.Status.PodIP, probeSvcName, svc.Spec.ClusterIP)

	// (b) The API server calls the webhook through its Service.
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: probeWebhookConfig},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: probeWebhookConfig,
			ClientConfig: admissionv1.WebhookClientConfig{CABundle: certs.CACert, Service: &admissionv1.ServiceReference{
				Namespace: realNodeTestNS, Name: probeSvcName, Path: ptr.To("/validate"), Port: ptr.To[int32](443)}},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: probeDenyLabel, Operator: metav1.LabelSelectorOpExists}}},
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), probeWebhookConfig, metav1.DeleteOptions{})
	})
	cm := func(name, value string) error {
		_, err := c.Kube.CoreV1().ConfigMaps(realNodeTestNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: realNodeTestNS, Labels: map[string]string{probeDenyLabel: value}}}, metav1.CreateOptions{})
		return err
	}
	var denyErr error
	denial := "denied by nodeprobe webhook in pod " + probePodName
	// The configuration takes a moment to reach the API server's webhook manager, and the
	// Service's endpoints a moment to follow the pod's readiness: until both have, the
	// ConfigMap is admitted or refused with "no endpoints available".
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		denyErr = cm("denied", "deny")
		if denyErr == nil {
			_ = c.Kube.CoreV1().ConfigMaps(realNodeTestNS).Delete(ctx, "denied", metav1.DeleteOptions{})
		}
		return denyErr != nil && strings.Contains(denyErr.Error(), denial), nil
	})
	if denyErr == nil || !strings.Contains(denyErr.Error(), denial) {
		t.Fatalf("the webhook through Service %s did not deny the ConfigMap: %v\nwebhook log:\n%s", probeSvcName, denyErr,
			podLog(ctx, c, probePodName))
	}
	t.Logf("API server -> Service %s -> webhook pod: %v", probeSvcName, denyErr)
	if err := cm("allowed", "allow"); err != nil {
		t.Fatalf("the webhook denied an allowed ConfigMap: %v", err)
	}

	// (a) + (c): a pod reads the API server through in-cluster config and calls the webhook
	// pod through the Service's ClusterIP.
	check := probePod(nodeName, "nodeprobe-check", []string{"check",
		"--url", fmt.Sprintf("https://%s:443/healthz", svc.Spec.ClusterIP), "--ca", "/certs/ca.crt",
		"--server-name", dns, "--expect", "ok " + probePodName})
	pstart = time.Now()
	createPod(ctx, t, c, check)
	p := waitPod(ctx, t, c, o, check.Name, 2*time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs := podLog(ctx, c, check.Name)
	t.Logf("check pod %s in %v, log:\n%s", p.Status.Phase, time.Since(pstart).Round(time.Millisecond), logs)
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("check pod %s (IP %s): %s", p.Status.Phase, p.Status.PodIP, describe(p))
	}
	for _, want := range []string{
		"KUBERNETES_SERVICE_HOST=" + RealNodeKubernetesIP,
		"server version: " + node.Status.NodeInfo.KubeletVersion,
		"authenticated as: system:serviceaccount:" + realNodeTestNS + ":default",
		"ok " + probePodName,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("check pod's log lacks %q", want)
		}
	}
	if !strings.HasPrefix(p.Status.PodIP, "10.244.0.") {
		t.Errorf("check pod IP %q is not in node 0's subnet", p.Status.PodIP)
	}
}

// buildProbeImage builds testbed/cluster/nodeprobe (static) and writes its image archive.
func buildProbeImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodeprobe")
	start := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./nodeprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nodeprobe: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "nodeprobe.tar")
	img := Image{Ref: probeImage, Files: []ImageFile{{Path: "nodeprobe", Data: data}}, Entrypoint: []string{"/nodeprobe"}}
	if err := WriteImageArchiveFile(archive, img); err != nil {
		t.Fatal(err)
	}
	t.Logf("nodeprobe built and archived in %v (%d bytes)", time.Since(start).Round(time.Millisecond), len(data))
	return archive
}

// probePod runs the probe image on the real node (its taint tolerated, pulling never).
func probePod(node, name string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: realNodeTestNS},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{RealNodeLabel: "true", corev1.LabelHostname: node},
			Tolerations:                   []corev1.Toleration{{Key: RealNodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever, Args: args,
				VolumeMounts: []corev1.VolumeMount{{Name: "certs", MountPath: "/certs", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nodeprobe-certs"}}}},
		},
	}
}

// createPod creates the pod, retrying while the namespace's default ServiceAccount does not
// exist yet.
func createPod(ctx context.Context, t *testing.T, c *Clients, p *corev1.Pod) {
	t.Helper()
	var err error
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err = c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		return err == nil || !strings.Contains(err.Error(), "serviceaccount"), nil
	})
	if err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

// waitPod polls the pod until done says so, for up to timeout; it fails the test with the
// pod's state and the tails of its log, the kubelet's and containerd's.
func waitPod(ctx context.Context, t *testing.T, c *Clients, o Options, name string, timeout time.Duration, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		p, err = c.Kube.CoreV1().Pods(realNodeTestNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && done(p), nil
	})
	if err != nil {
		node := o.RealNodeNames()[0]
		t.Fatalf("pod %s not done within %v: %v: %s\nlog:\n%s\nkubelet log: %s\n%s\ncontainerd log: %s\n%s", name, timeout, err, describe(p),
			tail(podLog(ctx, c, name), 30),
			o.RealNodeLog(node, "kubelet"), tail(readFile(o.RealNodeLog(node, "kubelet")), 25),
			o.RealNodeLog(node, "containerd"), tail(readFile(o.RealNodeLog(node, "containerd")), 15))
	}
	return p
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podLog reads the pod's log through the API server (which asks the kubelet).
func podLog(ctx context.Context, c *Clients, name string) string {
	data, err := c.Kube.CoreV1().Pods(realNodeTestNS).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	return string(data)
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "no pod"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s", c.Type, c.Status, c.Message)
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil {
			fmt.Fprintf(&b, "; %s waiting %s: %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		}
		if s.State.Terminated != nil {
			fmt.Fprintf(&b, "; %s terminated %d %s: %s", s.Name, s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message)
		}
	}
	return b.String()
}

func condition(n *corev1.Node) string {
	if NodeReady(n) {
		return "Ready"
	}
	return "not Ready"
}
