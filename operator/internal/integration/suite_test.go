//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	allocutil "github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/setup"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

var (
	env *envtest.Environment
	k8s client.Client
	nsN atomic.Int32
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// trainingOperatorCRDs finds the PyTorchJob CRD in the training-operator module source.
func trainingOperatorCRDs() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/training-operator").Output()
	if err != nil {
		return "", fmt.Errorf("go list training-operator: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "manifests", "base", "crds"), nil
}

// kubeRayCRDs finds the RayJob CRD in the KubeRay ray-operator module source.
func kubeRayCRDs() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ray-project/kuberay/ray-operator").Output()
	if err != nil {
		return "", fmt.Errorf("go list ray-operator: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases"), nil
}

// trainerCRDs are the TrainJob, ClusterTrainingRuntime and TrainingRuntime CRDs of Kubeflow
// Trainer v2, which `make test-integration` copies into bin/trainer-crds (TRAINER_CRDS) from
// the trainer's module: the module is not a dependency of this one (its API imports JobSet).
func trainerCRDs(root string) ([]string, error) {
	dir := os.Getenv("TRAINER_CRDS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "trainer-crds")
	}
	var crds []string
	for _, r := range []string{"trainjobs", "clustertrainingruntimes", "trainingruntimes"} {
		crd := filepath.Join(dir, "trainer.kubeflow.org_"+r+".yaml")
		if _, err := os.Stat(crd); err != nil {
			return nil, fmt.Errorf("integration: a Trainer CRD is missing (%v); run `make test-integration`, which fetches it", err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// verbosity is the log verbosity of the operators under test: PICKYMAN_TEST_V, default 0.
func verbosity() int {
	s := strings.TrimSpace(os.Getenv("PICKYMAN_TEST_V"))
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: PICKYMAN_TEST_V=%q is not a number, using 0: %v\n", s, err)
		return 0
	}
	return v
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity()))))
	root := repoRoot()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			fmt.Fprintf(os.Stderr, "integration: %s missing in %s; run `make tools`\n", b, assets)
			return 1
		}
	}
	toCRDs, err := trainingOperatorCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rayCRDs, err := kubeRayCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	trainCRDs, err := trainerCRDs(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths: append([]string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(toCRDs, "kubeflow.org_pytorchjobs.yaml"),
				filepath.Join(rayCRDs, "ray.io_rayjobs.yaml")}, trainCRDs...),
			ErrorIfPathMissing: true,
		},
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}},
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: start envtest: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme, err := setup.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// testConfig is the operator configuration of the tests: queues low (0), default (0) and
// high (100), cycles every second, short checkpoint deadlines.
func testConfig(policy string) *configv1.Configuration {
	c := &configv1.Configuration{
		Queues: []configv1.Queue{{Name: "default"}, {Name: "low"}, {Name: "high", Priority: 100}},
		Policy: configv1.Policy{Name: policy},
	}
	c.ScheduleInterval = metav1.Duration{Duration: time.Second}
	c.Checkpoint.NowDeadline = metav1.Duration{Duration: 20 * time.Second}
	c.Checkpoint.BoundaryDeadline = metav1.Duration{Duration: 20 * time.Second}
	c.Manager.HealthProbeBindAddress = "0"
	// One operator at a time, started and stopped by the tests: no lease to wait for.
	c.Manager.LeaderElection = ptr.To(false)
	c.Default()
	return c
}

// operator is a running operator manager.
type operator struct {
	t      *testing.T
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan error
}

// startOperator starts an operator with conf and waits until its webhook server answers.
func startOperator(t *testing.T, conf *configv1.Configuration) *operator {
	t.Helper()
	wo := &env.WebhookInstallOptions
	conf.Manager.WebhookPort = wo.LocalServingPort
	mgr, err := setup.New(env.Config, conf, setup.Options{
		Webhooks: true, WebhookHost: wo.LocalServingHost, WebhookCertDir: wo.LocalServingCertDir, DisableMetricsServer: true, SkipNameValidation: true,
	})
	if err != nil {
		t.Fatalf("operator: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{t: t, mgr: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	addr := net.JoinHostPort(wo.LocalServingHost, fmt.Sprint(wo.LocalServingPort))
	eventually(t, 20*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	t.Cleanup(op.stop)
	return op
}

// stop stops the operator and waits for it; stopping twice is a no-op.
func (o *operator) stop() {
	if o.cancel == nil {
		return
	}
	o.cancel()
	if err := <-o.done; err != nil {
		o.t.Errorf("operator: %v", err)
	}
	o.cancel = nil
}

// newNamespace creates a namespace for one test and cleans up its objects (and the given
// nodes) at the end: envtest runs no garbage collector or namespace controller.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("it-%d", nsN.Add(1))
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8s.DeleteAllOf(ctx, &kftraining.PyTorchJob{}, client.InNamespace(ns))
		_ = k8s.DeleteAllOf(ctx, &rayv1.RayJob{}, client.InNamespace(ns))
		_ = k8s.DeleteAllOf(ctx, trainjob.Integration.NewObject(), client.InNamespace(ns))
		_ = k8s.DeleteAllOf(ctx, &v1alpha1.Allocation{}, client.InNamespace(ns))
		_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	return ns
}

// makeNodes creates GPU nodes and deletes them at the end of the test.
func makeNodes(t *testing.T, gpus int64, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"nvidia.com/gpu.product": "A100"}}}
		if err := k8s.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		// The API server taints new nodes not-ready; no node controller lifts it here.
		node.Spec.Taints = nil
		if err := k8s.Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		node.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": q}
		node.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": q}
		if err := k8s.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })
	}
}

// eventually retries f until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("not reached within %v: %v", timeout, err)
}

// allocation reads the Allocation of a PyTorchJob.
func allocation(ns, job string) (*v1alpha1.Allocation, error) {
	return kindAllocation(kftraining.PyTorchJobKind, ns, job)
}

// kindAllocation reads the Allocation of a job of a kind.
func kindAllocation(kind, ns, job string) (*v1alpha1.Allocation, error) {
	a := &v1alpha1.Allocation{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: jobframework.AllocationName(kind, job)}, a)
	return a, err
}

// waitPhase waits until a PyTorchJob's Allocation is in phase and returns it.
func waitPhase(t *testing.T, ns, job string, phase v1alpha1.AllocationPhase, timeout time.Duration) *v1alpha1.Allocation {
	t.Helper()
	return waitKindPhase(t, kftraining.PyTorchJobKind, ns, job, phase, timeout)
}

// waitKindPhase waits until the Allocation of a job of a kind is in phase and returns it.
func waitKindPhase(t *testing.T, kind, ns, job string, phase v1alpha1.AllocationPhase, timeout time.Duration) *v1alpha1.Allocation {
	t.Helper()
	var a *v1alpha1.Allocation
	eventually(t, timeout, func() error {
		var err error
		if a, err = kindAllocation(kind, ns, job); err != nil {
			return err
		}
		if a.Status.Phase != phase {
			return fmt.Errorf("allocation %s is %q, want %q", a.Name, a.Status.Phase, phase)
		}
		return nil
	})
	return a
}

// jobPods lists the pods of a job.
func jobPods(ns, job string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{kftraining.JobNameLabel: job})
	return list.Items, err
}

// podsStarted checks that n live pods of the Allocation named alloc have started (bound and
// Running, as the fake kubelet sets them). A test that preempts a job waits for this first:
// the handshake asks only started pods for a checkpoint, and suspends a job whose pods have
// not started at once, without a request to see.
func podsStarted(ns, alloc string, n int) error {
	var list corev1.PodList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelAllocation: alloc}); err != nil {
		return err
	}
	started := 0
	for i := range list.Items {
		if p := &list.Items[i]; p.DeletionTimestamp == nil && allocutil.Started(p) {
			started++
		}
	}
	if started != n {
		return fmt.Errorf("%d of %d pods of %s started, want %d", started, len(list.Items), alloc, n)
	}
	return nil
}

// fakeTrainingOperator stands in for the training-operator in namespace ns: it creates the
// pods of every job that is not suspended and has not finished, and deletes the pods of
// suspended jobs, until the test ends.
func fakeTrainingOperator(t *testing.T, ns string) {
	fakeKubelet(t, ns)
	everyTick(t, func(ctx context.Context) {
		var jobs kftraining.PyTorchJobList
		if err := k8s.List(ctx, &jobs, client.InNamespace(ns)); err == nil {
			for i := range jobs.Items {
				syncPods(ctx, &jobs.Items[i])
			}
		}
	})
}

// fakeKubelet stands in for the kubelets of namespace ns's nodes: a pod bound to a node and
// still Pending is set Running, as a kubelet does once its containers start, until the test
// ends. The handshake waits only for pods that have started.
func fakeKubelet(t *testing.T, ns string) {
	everyTick(t, func(ctx context.Context) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || (p.Status.Phase != "" && p.Status.Phase != corev1.PodPending) {
				continue
			}
			p.Status.Phase = corev1.PodRunning
			_ = k8s.Status().Update(ctx, p)
		}
	})
}

// everyTick runs f every 100 ms in the background until the test ends (a fake controller).
func everyTick(t *testing.T, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

func syncPods(ctx context.Context, job *kftraining.PyTorchJob) {
	g := (*pytorchjob.Job)(job)
	if fin, _ := g.Finished(); fin || g.IsSuspended() {
		_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(job.Namespace),
			client.MatchingLabels{kftraining.JobNameLabel: job.Name}, client.GracePeriodSeconds(0))
		return
	}
	for rt, spec := range job.Spec.PyTorchReplicaSpecs {
		for i := range ptr.Deref(spec.Replicas, 1) {
			pod := utiltesting.MakePod(job, rt, i)
			if err := k8s.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
				continue
			}
		}
	}
}

// finishJob marks a job Succeeded, as the training-operator would.
func finishJob(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		job := &kftraining.PyTorchJob{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
			return err
		}
		now := metav1.Now()
		job.Status.Conditions = append(job.Status.Conditions, kftraining.JobCondition{
			Type: kftraining.JobSucceeded, Status: corev1.ConditionTrue, LastUpdateTime: now, LastTransitionTime: now})
		job.Status.ReplicaStatuses = map[kftraining.ReplicaType]*kftraining.ReplicaStatus{}
		return k8s.Status().Update(context.Background(), job)
	})
}
