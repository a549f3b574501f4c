package setup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/kinds"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/controller"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/internal/profilestore"
	"github.com/pickyman/pickyman/operator/internal/scheduler"
	pmwebhook "github.com/pickyman/pickyman/operator/internal/webhook"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/policies"
)

// NewScheme returns a scheme with the Kubernetes types, PickyMan's API and the job kinds.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme, rayv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Options are the settings that do not come from the configuration file.
type Options struct {
	// Clock drives the scheduler, deadlines and timestamps; the real clock if nil.
	Clock clock.WithTicker
	// Metrics are the collectors; new unregistered ones if nil (main passes registered ones).
	Metrics *metrics.Metrics
	// Webhooks enables the admission webhooks.
	Webhooks bool
	// WebhookHost and WebhookCertDir override the webhook server's (tests).
	WebhookHost    string
	WebhookCertDir string
	// DisableMetricsServer turns the metrics endpoint off (tests run several managers).
	DisableMetricsServer bool
	// LeaderElectionID names the lease.
	LeaderElectionID string
	// CertsReady, when set, holds the webhooks back until it is closed (the certificate
	// rotator's readiness): the webhook server starts only once its certificate is there, and
	// the operator is not ready before it serves.
	CertsReady <-chan struct{}
	// SkipNameValidation allows several managers in one process to register controllers of
	// the same names (tests that restart the operator).
	SkipNameValidation bool
}

// OperatorNamespace is the namespace of the operator's own objects (the leader-election
// lease and the scheduler fence): the configuration's leader-election namespace, else the
// namespace of the pod it runs in, else "default" (a local run).
func OperatorNamespace(conf *configv1.Configuration) string {
	if ns := conf.Manager.LeaderElectionNamespace; ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return metav1.NamespaceDefault
}

// fenceIdentity names this process in the scheduler fence, as leader election names it.
func fenceIdentity() string {
	host, _ := os.Hostname()
	return host + "_" + string(uuid.NewUUID())
}

// New builds the operator's manager with every controller registered.
func New(restCfg *rest.Config, conf *configv1.Configuration, opts Options) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	// The operator's requests are paced by its configuration, not client-go's defaults.
	restCfg = rest.CopyConfig(restCfg)
	restCfg.QPS, restCfg.Burst = conf.ClientConnection.QPS, int(conf.ClientConnection.Burst)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = "pickyman-operator.pickyman.dev"
	}
	policy, err := policies.New(conf.Policy, policies.Options{Protection: &conf.Protection, Overhead: &conf.Overhead})
	if err != nil {
		return nil, err
	}
	// Only pods of PickyMan jobs (they carry the Allocation label) are cached.
	hasAlloc, err := labels.NewRequirement(v1alpha1.LabelAllocation, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	m := conf.Manager
	mopts := ctrl.Options{
		Scheme:                  scheme,
		HealthProbeBindAddress:  m.HealthProbeBindAddress,
		LeaderElection:          ptr.Deref(m.LeaderElection, true),
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: m.LeaderElectionNamespace,
		// A graceful shutdown hands the lease over at once (the binary exits right after the
		// manager stops, which is what makes this safe); a crash still waits for it to expire.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: m.MetricsBindAddress},
		Cache: cache.Options{
			// No component reads managedFields, and at 5,000 jobs they are a large part of
			// each cached job, pod and Allocation (a write without them keeps the server's).
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasAlloc)},
				// The scheduler fence is read from the cache (the only Lease cached: the operator
				// may list Leases in its own namespace only).
				&coordinationv1.Lease{}: {
					Namespaces: map[string]cache.Config{OperatorNamespace(conf): {}},
					Field:      fields.OneTermEqualSelector("metadata.name", scheduler.FenceName),
				},
			}},
	}
	// Every Allocation write of the process is recorded, so that the scheduler's snapshot can
	// come from the cache and still hold them (scheduler.Assumed).
	assumed := scheduler.NewAssumed(opts.Clock)
	mopts.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return assumed.Client(c), nil
	}
	if opts.SkipNameValidation {
		mopts.Controller.SkipNameValidation = ptr.To(true)
	}
	if opts.DisableMetricsServer {
		mopts.Metrics.BindAddress = "0"
	}
	if opts.Webhooks {
		wo := webhook.Options{Port: m.WebhookPort, CertDir: m.WebhookCertDir}
		if opts.WebhookHost != "" {
			wo.Host = opts.WebhookHost
		}
		if opts.WebhookCertDir != "" {
			wo.CertDir = opts.WebhookCertDir
		}
		mopts.WebhookServer = webhook.NewServer(wo)
	}
	mgr, err := ctrl.NewManager(restCfg, mopts)
	if err != nil {
		return nil, err
	}
	recorder := mgr.GetEventRecorder("pickyman-operator")
	bound, err := newBoundPodsCache(mgr, corev1.ResourceName(conf.GPUResource))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(bound); err != nil {
		return nil, err
	}
	allocs, err := storeLister[*v1alpha1.Allocation](mgr.GetCache(), &v1alpha1.Allocation{})
	if err != nil {
		return nil, err
	}
	nodes, err := storeLister[*corev1.Node](mgr.GetCache(), &corev1.Node{})
	if err != nil {
		return nil, err
	}
	jobPods, err := storeLister[*corev1.Pod](mgr.GetCache(), &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	boundPods, err := storeLister[*corev1.Pod](bound, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	sch := scheduler.New(scheduler.Scheduler{
		Client:      mgr.GetClient(),
		Reader:      mgr.GetAPIReader(),
		Assumed:     assumed,
		Allocations: allocs,
		Nodes:       nodes,
		JobPods:     jobPods,
		BoundPods:   boundPods,
		Recorder:    recorder,
		Clock:       opts.Clock,
		Config:      conf,
		Metrics:     opts.Metrics,
		Policy:      policy,
		Cache:       mgr.GetCache(),
		Pods:        bound,
		Fence: &scheduler.Fence{
			Reader: mgr.GetClient(), Client: mgr.GetClient(), Clock: opts.Clock,
			Key:      types.NamespacedName{Namespace: OperatorNamespace(conf), Name: scheduler.FenceName},
			Identity: fenceIdentity(),
		},
	})
	if err := mgr.Add(sch); err != nil {
		return nil, err
	}
	enabled, err := EnabledIntegrations(mgr.GetRESTMapper())
	if err != nil {
		return nil, err
	}
	profiles := profilestore.New(mgr.GetClient(), opts.Clock)
	for _, in := range enabled {
		r := &controller.JobReconciler{
			Client:      mgr.GetClient(),
			Reader:      mgr.GetAPIReader(),
			Scheme:      scheme,
			Recorder:    recorder,
			Clock:       opts.Clock,
			Config:      conf,
			Metrics:     opts.Metrics,
			Profiles:    profiles,
			Inbox:       sch.Inbox,
			Integration: in,
			Workers:     int(conf.JobConcurrency),
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("job controller %s: %w", in.GVK.Kind, err)
		}
	}
	hs := &controller.HandshakeReconciler{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Recorder: recorder,
		Clock:    opts.Clock,
		Metrics:  opts.Metrics,
		Inbox:    sch.Inbox,
		Workers:  int(conf.JobConcurrency),
	}
	if err := hs.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&controller.Binder{Client: mgr.GetClient(), Recorder: recorder}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := addWebhooks(mgr, conf, opts); err != nil {
		return nil, err
	}
	return mgr, nil
}

// addWebhooks registers the webhooks and the readiness check: ready once the webhook server
// serves (at once without webhooks). With CertsReady the webhooks are registered, and the
// manager's webhook server added and started, only after it is closed.
func addWebhooks(mgr ctrl.Manager, conf *configv1.Configuration, opts Options) error {
	if !opts.Webhooks {
		return mgr.AddReadyzCheck("readyz", healthz.Ping)
	}
	if opts.CertsReady == nil {
		pmwebhook.Setup(mgr, conf)
		return mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker())
	}
	var started atomic.Pointer[healthz.Checker]
	go func() {
		<-opts.CertsReady
		ctrl.Log.Info("webhook certificates ready; serving the webhooks")
		pmwebhook.Setup(mgr, conf)
		check := mgr.GetWebhookServer().StartedChecker()
		started.Store(&check)
	}()
	return mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		check := started.Load()
		if check == nil {
			return errors.New("webhook certificates not ready")
		}
		return (*check)(req)
	})
}

// EnabledIntegrations returns the job kinds whose CRDs the API server serves, and logs the
// others as disabled: a cluster without KubeRay runs PickyMan for its PyTorchJobs. A kind
// installed later is picked up when the operator restarts.
func EnabledIntegrations(mapper meta.RESTMapper) ([]jobframework.Integration, error) {
	var out []jobframework.Integration
	for _, in := range kinds.Integrations() {
		_, err := mapper.RESTMapping(in.GVK.GroupKind(), in.GVK.Version)
		switch {
		case err == nil:
			out = append(out, in)
			ctrl.Log.Info("job kind enabled", "kind", in.GVK.String())
		case meta.IsNoMatchError(err):
			ctrl.Log.Info("job kind disabled: its CRD is not installed", "kind", in.GVK.String())
		default:
			return nil, fmt.Errorf("job kind %s: %w", in.GVK, err)
		}
	}
	return out, nil
}

// storeLister returns a lister of the cached objects of obj's kind that reads the
// informer's store without copying them (scheduler.StoreItems),
// or nil where the cache's informer has no store to read: the scheduler then lists through
// the client.
func storeLister[T client.Object](c cache.Cache, obj T) (func(context.Context) ([]T, error), error) {
	inf, err := c.GetInformer(context.Background(), obj)
	if err != nil {
		return nil, fmt.Errorf("%T informer: %w", obj, err)
	}
	st, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, nil
	}
	store := st.GetStore()
	return func(ctx context.Context) ([]T, error) {
		// As a list through the cache does, wait for the informer's first list.
		if !inf.HasSynced() && !c.WaitForCacheSync(ctx) {
			return nil, fmt.Errorf("%T cache not synced: %w", obj, ctx.Err())
		}
		return scheduler.StoreItems[T](store)
	}, nil
}
