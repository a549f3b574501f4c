// Command jobset-controller runs JobSet's controllers and webhooks (sigs.k8s.io/jobset, at the
// version go.mod pins, unmodified) as a process of the local testbed cluster. It differs from
// JobSet's own main only in how its webhook server is set up: the testbed makes the serving
// certificate (for 127.0.0.1) and points the webhook configurations at this process's address,
// so JobSet's internal certificate rotation, which writes a certificate for an in-cluster
// Service name into a fixed directory that other testbed processes share, is not started.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/controllers"
	"sigs.k8s.io/jobset/pkg/metrics"
	"sigs.k8s.io/jobset/pkg/webhooks"
)

func main() {
	probe := flag.String("health-probe-bind-address", "127.0.0.1:8083", "address of the health and readiness probes")
	host := flag.String("webhook-host", "127.0.0.1", "address the webhook server listens on")
	port := flag.Int("webhook-port", 9444, "port of the webhook server")
	certDir := flag.String("cert-dir", "", "directory holding the webhook server's tls.crt and tls.key")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := run(*probe, *host, *port, *certDir); err != nil {
		fmt.Fprintln(os.Stderr, "jobset-controller:", err)
		os.Exit(1)
	}
}

func run(probe, host string, port int, certDir string) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := jobset.AddToScheme(scheme); err != nil {
		return err
	}
	metrics.Register()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probe,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := controllers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := controllers.SetupPodIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := controllers.NewJobSetReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorderFor("jobset")).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("JobSet controller: %w", err)
	}
	if err := controllers.NewPodReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorderFor("pod")).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("pod controller: %w", err)
	}
	jsw, err := webhooks.NewJobSetWebhook(mgr.GetClient())
	if err != nil {
		return err
	}
	if err := jsw.SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("JobSet webhook: %w", err)
	}
	if err := webhooks.NewPodWebhook(mgr.GetClient()).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("pod webhook: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
