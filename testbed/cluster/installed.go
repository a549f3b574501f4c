package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/config/installer"
)

// PickyMan installed on the testbed: the operator (a Deployment of two replicas) and the
// testbed agent (a DaemonSet) run as pods on the testbed's real node, from the images of
// `make images` imported into the node's runtime, installed from the installer a user applies
// (config/default) through the testbed overlay (config/overlays/testbed). The testbed sets
// only what a user's installation would set too: the operator's configuration (its ConfigMap)
// and the agent's flags.
const (
	// OperatorDeployment, AgentDaemonSet and OperatorConfigMap are the installer's names.
	OperatorDeployment = "pickyman-operator"
	AgentDaemonSet     = "pickyman-agent"
	operatorConfigMap  = "pickyman-operator-config"
	// OperatorLease is the operator's leader-election lease.
	OperatorLease = "pickyman-operator.pickyman.dev"
	// OperatorReplicas is what the installer runs.
	OperatorReplicas = 2
	// testbedOverlay is the kustomization the testbed installs.
	testbedOverlay = "overlays/testbed"
)

// ImageArchives are the image archives of `make images` (docs/images.md).
type ImageArchives struct {
	Operator, Agent, TestbedAgent string
	// OperatorTag, AgentTag and TestbedAgentTag are the images' names (bin/images/digests.txt).
	OperatorTag, AgentTag, TestbedAgentTag string
}

// DefaultImageArchives reads bin/images/digests.txt for the tags of the archives beside it.
func DefaultImageArchives(binDir string) (ImageArchives, error) {
	dir := filepath.Join(binDir, "images")
	a := ImageArchives{Operator: filepath.Join(dir, "pickyman-operator.tar"), Agent: filepath.Join(dir, "pickyman-agent.tar"),
		TestbedAgent: filepath.Join(dir, "pickyman-testbed-agent.tar")}
	f, err := os.Open(filepath.Join(dir, "digests.txt"))
	if err != nil {
		return a, fmt.Errorf("images: %w (run `make images`)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		tag, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch {
		case strings.Contains(tag, "/pickyman-operator:"):
			a.OperatorTag = tag
		case strings.Contains(tag, "/pickyman-agent:"):
			a.AgentTag = tag
		case strings.Contains(tag, "/pickyman-testbed-agent:"):
			a.TestbedAgentTag = tag
		}
	}
	if a.OperatorTag == "" || a.AgentTag == "" || a.TestbedAgentTag == "" {
		return a, fmt.Errorf("images: %s names no operator, agent or testbed-agent image (run `make images`)", f.Name())
	}
	for _, p := range []string{a.Operator, a.Agent, a.TestbedAgent} {
		if _, err := os.Stat(p); err != nil {
			return a, fmt.Errorf("images: %w (run `make images`)", err)
		}
	}
	return a, nil
}

// installedManifests renders the testbed overlay with the images and the testbed's settings:
// the operator's configuration in its ConfigMap, the agent's time scale, seed and node
// selector in its flags.
func (o Options) installedManifests(img ImageArchives) ([]*unstructured.Unstructured, error) {
	objs, err := installer.Objects(installer.Options{
		Kustomization: filepath.Join(o.ConfigDir, testbedOverlay), Operator: img.OperatorTag, Agent: img.AgentTag, TestbedAgent: img.TestbedAgentTag,
	})
	if err != nil {
		return nil, err
	}
	conf, err := o.installedOperatorConfig()
	if err != nil {
		return nil, err
	}
	var seenConfig, seenAgent bool
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "ConfigMap" && strings.HasPrefix(obj.GetName(), operatorConfigMap):
			if err := unstructured.SetNestedField(obj.Object, string(conf), "data", "config.yaml"); err != nil {
				return nil, err
			}
			seenConfig = true
		case obj.GetKind() == "DaemonSet" && obj.GetName() == AgentDaemonSet:
			if err := setContainerArgs(obj, "agent", o.testbedAgentArgs(":9400")); err != nil {
				return nil, err
			}
			seenAgent = true
		}
	}
	if !seenConfig || !seenAgent {
		return nil, fmt.Errorf("%s: no operator ConfigMap (%v) or agent DaemonSet (%v)", testbedOverlay, seenConfig, seenAgent)
	}
	return objs, nil
}

// installedOperatorConfig is the operator's configuration as the installed pods run it: the
// testbed's, with the installer's addresses (config/manager/operator-config.yaml).
func (o Options) installedOperatorConfig() ([]byte, error) {
	conf := o.PickyMan.Config
	if conf == nil {
		conf = &configv1.Configuration{}
	}
	conf = conf.DeepCopy()
	conf.APIVersion, conf.Kind = "config.pickyman.dev/v1alpha1", "Configuration"
	conf.Manager = configv1.Manager{
		MetricsBindAddress: ":8080", HealthProbeBindAddress: ":8081", WebhookPort: 9443,
		LeaderElection: ptr.To(true), LeaderElectionNamespace: PickyManNamespace,
	}
	return yaml.Marshal(conf)
}

// testbedAgentArgs are the testbed agent's flags, for a process or a pod.
func (o Options) testbedAgentArgs(metricsAddr string) []string {
	sel := o.PickyMan.NodeSelector
	if sel == "" {
		sel = LabelType + "=kwok"
	}
	scale := o.PickyMan.TimeScale
	if scale <= 0 {
		scale = 1
	}
	return []string{"--testbed-node-selector", sel,
		"--time-scale", strconv.FormatFloat(scale, 'g', -1, 64),
		"--seed", strconv.FormatInt(o.PickyMan.Seed, 10), "--metrics-addr", metricsAddr}
}

func setContainerArgs(obj *unstructured.Unstructured, container string, args []string) error {
	list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	for i, c := range list {
		m := c.(map[string]any)
		if m["name"] != container {
			continue
		}
		vals := make([]any, len(args))
		for j, a := range args {
			vals[j] = a
		}
		m["args"] = vals
		list[i] = m
		return unstructured.SetNestedSlice(obj.Object, list, "spec", "template", "spec", "containers")
	}
	return fmt.Errorf("%s %s has no container %s", obj.GetKind(), obj.GetName(), container)
}

// InstallPickyMan imports the images into the real nodes, applies the installer with the
// testbed overlay and waits until PickyMan is Ready: both operator replicas ready (their
// webhooks served with the rotated certificate), a leader elected, the agent ready. It is
// idempotent; applying a changed configuration restarts the operator's pods.
func (o Options) InstallPickyMan(ctx context.Context, c *Clients) error {
	if o.PickyMan == nil {
		return errors.New("no PickyMan options")
	}
	img, err := DefaultImageArchives(o.BinDir)
	if err != nil {
		return err
	}
	// On the testbed's cluster the images go into the real nodes' runtime; on another
	// cluster (kind) they were loaded into its nodes already.
	if o.PickyMan.Kubeconfig == "" {
		if len(o.startedRealNodes()) == 0 {
			return errors.New("installed PickyMan runs on a real node: the cluster has none (--real-nodes)")
		}
		for _, a := range []string{img.Operator, img.Agent, img.TestbedAgent} {
			if err := o.ImportImage(ctx, a); err != nil {
				return err
			}
		}
	}
	objs, err := o.installedManifests(img)
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, objs, o.Timeout); err != nil {
		return fmt.Errorf("apply the installer: %w", err)
	}
	return o.WaitPickyManReady(ctx, c)
}

// WaitPickyManReady waits until the operator Deployment has its replicas ready, one of them
// holds the lease, and the agent DaemonSet is ready.
func (o Options) WaitPickyManReady(ctx context.Context, c *Clients) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.Kube.AppsV1().Deployments(PickyManNamespace).Get(ctx, OperatorDeployment, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.Replicas != want {
			return false, nil
		}
		if _, err := o.OperatorLeader(ctx, c); err != nil {
			return false, nil
		}
		ds, err := c.Kube.AppsV1().DaemonSets(PickyManNamespace).Get(ctx, AgentDaemonSet, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return ds.Status.ObservedGeneration >= ds.Generation && ds.Status.DesiredNumberScheduled > 0 &&
			ds.Status.NumberReady == ds.Status.DesiredNumberScheduled && ds.Status.UpdatedNumberScheduled == ds.Status.DesiredNumberScheduled, nil
	})
	if err != nil {
		return fmt.Errorf("PickyMan not ready (%w):\n%s", err, o.describePickyMan(ctx, c))
	}
	return nil
}

// OperatorLeader is the operator pod that holds the lease, when that pod runs.
func (o Options) OperatorLeader(ctx context.Context, c *Clients) (string, error) {
	l, err := c.Kube.CoordinationV1().Leases(PickyManNamespace).Get(ctx, OperatorLease, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	holder := leaseHolderPod(l)
	if holder == "" {
		return "", errors.New("lease has no holder")
	}
	p, err := c.Kube.CoreV1().Pods(PickyManNamespace).Get(ctx, holder, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("lease holder %s: %w", holder, err)
	}
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return "", fmt.Errorf("lease holder %s is %s", holder, p.Status.Phase)
	}
	return holder, nil
}

// leaseHolderPod is the pod name in a lease's holder identity (controller-runtime writes
// "<hostname>_<uuid>", and a pod's hostname is its name).
func leaseHolderPod(l *coordinationv1.Lease) string {
	id := ptr.Deref(l.Spec.HolderIdentity, "")
	name, _, _ := strings.Cut(id, "_")
	return name
}

// operatorPods are the running operator pods, by name.
func operatorPods(ctx context.Context, c *Clients) ([]corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(PickyManNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=pickyman,app.kubernetes.io/component=operator"})
	if err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// scaleOperator sets the operator Deployment's replicas.
func scaleOperator(ctx context.Context, c *Clients, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	_, err := c.Kube.AppsV1().Deployments(PickyManNamespace).Patch(ctx, OperatorDeployment, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// KillOperatorPod deletes one operator pod at once (grace period 0), as a crash of its node
// would; the Deployment starts another.
func KillOperatorPod(ctx context.Context, c *Clients, name string) error {
	err := c.Kube.CoreV1().Pods(PickyManNamespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// stopInstalledOperator stops every operator replica: scaled to zero, the pods deleted at
// once (kill) or with their grace period, and waited for until none is left.
func (o Options) stopInstalledOperator(ctx context.Context, c *Clients, kill bool) error {
	if err := scaleOperator(ctx, c, 0); err != nil {
		return err
	}
	if kill {
		pods, err := operatorPods(ctx, c)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if err := KillOperatorPod(ctx, c, p.Name); err != nil {
				return err
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := operatorPods(ctx, c)
		return err == nil && len(pods) == 0, nil
	})
}

// startInstalledOperator writes the current configuration into the operator's ConfigMap and
// scales it back to its replicas; pods that run an older configuration are replaced.
func (o Options) startInstalledOperator(ctx context.Context, c *Clients) error {
	conf, err := o.installedOperatorConfig()
	if err != nil {
		return err
	}
	cms, err := c.Kube.CoreV1().ConfigMaps(PickyManNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	changed := false
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, operatorConfigMap) || cm.Data["config.yaml"] == string(conf) {
			continue
		}
		cm.Data["config.yaml"] = string(conf)
		if _, err := c.Kube.CoreV1().ConfigMaps(PickyManNamespace).Update(ctx, &cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		// The configuration is read at start: a rollout picks it up.
		patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"pickyman.dev/testbed-config":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
		if _, err := c.Kube.AppsV1().Deployments(PickyManNamespace).Patch(ctx, OperatorDeployment, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	if err := scaleOperator(ctx, c, OperatorReplicas); err != nil {
		return err
	}
	return o.WaitPickyManReady(ctx, c)
}

// describePickyMan says where the installed components stand, for an error.
func (o Options) describePickyMan(ctx context.Context, c *Clients) string {
	var b strings.Builder
	pods, err := c.Kube.CoreV1().Pods(PickyManNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  pod %s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			state := "running"
			switch {
			case cs.State.Waiting != nil:
				state = "waiting: " + cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
			case cs.State.Terminated != nil:
				state = fmt.Sprintf("terminated: %s (exit %d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
			}
			fmt.Fprintf(&b, "; %s ready=%v restarts=%d %s", cs.Name, cs.Ready, cs.RestartCount, state)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, "; %s: %s", cond.Type, cond.Message)
			}
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		b.WriteString("  no pod in " + PickyManNamespace + "\n")
	}
	return b.String()
}

// componentSelector selects the pods of an installed component.
func componentSelector(component string) string {
	if component == ComponentAgent {
		return "app.kubernetes.io/name=pickyman-agent"
	}
	return "app.kubernetes.io/name=pickyman,app.kubernetes.io/component=operator"
}

// RunningPods are an installed component's running pods that are not being deleted.
func RunningPods(ctx context.Context, c *Clients, component string) ([]corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(PickyManNamespace).List(ctx, metav1.ListOptions{LabelSelector: componentSelector(component)})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	return out, nil
}

// installedRunning is how many pods of the component run (ComponentPid's "is it running" for
// installed components).
func (o Options) installedRunning(component string) int {
	c, err := NewClients(o.pickymanKubeconfig())
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := RunningPods(ctx, c, component)
	if err != nil {
		return 0
	}
	return len(pods)
}

// stopInstalledComponent stops the operator (every replica) or kills the agent's pods,
// which their DaemonSet starts again.
func (o Options) stopInstalledComponent(component string, kill bool) error {
	c, err := NewClients(o.pickymanKubeconfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	if component == ComponentOperator {
		return o.stopInstalledOperator(ctx, c, kill)
	}
	pods, err := RunningPods(ctx, c, component)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	if kill {
		opts.GracePeriodSeconds = ptr.To(int64(0))
	}
	for _, p := range pods {
		if err := c.Kube.CoreV1().Pods(PickyManNamespace).Delete(ctx, p.Name, opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// installedAgentMetricsURL is the metrics endpoint of the agent pod (its pod IP is reachable
// from the host through the real node's bridge); "" when there is none.
func (o Options) installedAgentMetricsURL() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	urls, err := o.installedMetricsURLs(ctx, ComponentAgent, "9400")
	if err != nil {
		return ""
	}
	return urls[0]
}

// installedMetricsURLs are the metrics endpoints, at port, of the running pods of an
// installed component that have an IP.
func (o Options) installedMetricsURLs(ctx context.Context, component, port string) ([]string, error) {
	c, err := NewClients(o.pickymanKubeconfig())
	if err != nil {
		return nil, err
	}
	pods, err := RunningPods(ctx, c, component)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods {
		if p.Status.PodIP != "" {
			out = append(out, "http://"+net.JoinHostPort(p.Status.PodIP, port)+"/metrics")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running %s pod with an IP", component)
	}
	return out, nil
}

// UninstallPickyMan deletes every object of the installer (as `kubectl delete -f
// dist/install.yaml` does) and waits until they are gone; it returns the objects still there
// when the wait ends.
func (o Options) UninstallPickyMan(ctx context.Context, c *Clients) ([]string, error) {
	img, err := DefaultImageArchives(o.BinDir)
	if err != nil {
		return nil, err
	}
	objs, err := o.installedManifests(img)
	if err != nil {
		return nil, err
	}
	mapper, err := c.mapper()
	if err != nil {
		return nil, err
	}
	resource := func(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		if obj.GetNamespace() != "" {
			return c.Dynamic.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
		}
		return c.Dynamic.Resource(m.Resource), nil
	}
	// In reverse order: the workloads before their RBAC, the CRDs last.
	for i := len(objs) - 1; i >= 0; i-- {
		r, err := resource(objs[i])
		if err != nil {
			return nil, err
		}
		err = r.Delete(ctx, objs[i].GetName(), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete %s %s: %w", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
	var left []string
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*o.Timeout, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, obj := range objs {
			r, err := resource(obj)
			if err != nil {
				// A CRD's kinds go with it.
				continue
			}
			if _, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName())
			}
		}
		return len(left) == 0, nil
	})
	return left, nil
}

// PodLog is one container log of a pod on a real node.
type PodLog struct {
	// Name is <pod>_<container>_<restart>.log.
	Name string
	Path string
}

// PodLogs lists the container logs that the real nodes' kubelets keep for the pods of a
// namespace (podLogsDir/<namespace>_<pod>_<uid>/<container>/<restart>.log).
func (o Options) PodLogs(namespace string) []PodLog {
	var out []PodLog
	for _, node := range o.RealNodeNames() {
		files, _ := filepath.Glob(filepath.Join(o.RealNodePodLogs(node), namespace+"_*", "*", "*.log"))
		for _, f := range files {
			container := filepath.Base(filepath.Dir(f))
			podDir := strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(f))), namespace+"_")
			pod := podDir
			if i := strings.LastIndex(podDir, "_"); i > 0 {
				pod = podDir[:i]
			}
			out = append(out, PodLog{Name: pod + "_" + container + "_" + filepath.Base(f), Path: f})
		}
	}
	return out
}

// installedPids are the host pids of the installed components' containers, found by their
// entrypoints (/pickyman-operator, /pickyman-testbed-agent: the local processes run from bin/
// instead), named like the components, with a suffix from the second replica on.
func installedPids() map[string]int {
	out := map[string]int{}
	eachProcess(func(pid int, cmdline string) {
		argv0, _, _ := strings.Cut(cmdline, "\x00")
		for _, component := range []string{ComponentOperator, ComponentAgent} {
			if argv0 != "/"+component {
				continue
			}
			name := component
			for i := 2; out[name] != 0; i++ {
				name = fmt.Sprintf("%s-%d", component, i)
			}
			out[name] = pid
		}
	})
	return out
}
