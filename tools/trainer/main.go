// Command trainer-controller-manager runs the Kubeflow Trainer v2 controllers and webhooks
// (github.com/kubeflow/trainer/v2, at the version go.mod pins, unmodified: the TrainJob
// controller, the training-runtime controllers and the runtime framework that turns a TrainJob
// and its runtime into a JobSet) as a process of the local testbed cluster. It differs from the
// Trainer's own main only in how its webhook server is set up: the testbed makes the serving
// certificate (for 127.0.0.1) and points the webhook configuration at this process's address,
// so the Trainer's internal certificate rotation, which writes a certificate for an in-cluster
// Service name into a fixed directory that other testbed processes share, is not started.
package main

import (
	"flag"
	"fmt"
	"os"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/controller"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlpkg "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

func main() {
	probe := flag.String("health-probe-bind-address", "127.0.0.1:8084", "address of the health and readiness probes")
	host := flag.String("webhook-host", "127.0.0.1", "address the webhook server listens on")
	port := flag.Int("webhook-port", 9445, "port of the webhook server")
	certDir := flag.String("cert-dir", "", "directory holding the webhook server's tls.crt and tls.key")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := run(*probe, *host, *port, *certDir); err != nil {
		fmt.Fprintln(os.Stderr, "trainer-controller-manager:", err)
		os.Exit(1)
	}
}

func run(probe, host string, port int, certDir string) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme, schedulerpluginsv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probe,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	runtimes, err := runtimecore.New(ctx, mgr.GetClient(), mgr.GetFieldIndexer())
	if err != nil {
		return fmt.Errorf("runtimes: %w", err)
	}
	if name, err := controller.SetupControllers(mgr, runtimes, ctrlpkg.Options{}); err != nil {
		return fmt.Errorf("controller %s: %w", name, err)
	}
	if name, err := webhooks.Setup(mgr, runtimes); err != nil {
		return fmt.Errorf("webhook %s: %w", name, err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
