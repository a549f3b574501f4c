// Command kuberay-operator runs KubeRay's RayCluster and RayJob controllers (ray-operator, at
// the version go.mod pins, unmodified) as a process of the local testbed cluster, where no
// Ray runs in the pods. KubeRay's RayJob controller submits the job to, and polls, the Ray
// dashboard of the RayCluster it created; here that dashboard is the testbed dashboard
// (dashboard.go), which accepts the submission and reports the job SUCCEEDED once the
// testbed agent has completed the simulated training of every GPU pod of the cluster. What
// KubeRay does with the job (creating the RayCluster on resume, deleting it on suspend,
// completing the RayJob) is its own code.
package main

import (
	"flag"
	"fmt"
	"os"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	probe := flag.String("health-probe-bind-address", "127.0.0.1:8082", "address of the health and readiness probes")
	workers := flag.Int("reconcile-concurrency", 4, "workers per controller")
	logCfg := textlogger.NewConfig()
	logCfg.AddFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(textlogger.NewLogger(logCfg))
	if err := run(*probe, *workers); err != nil {
		klog.ErrorS(err, "kuberay-operator")
		os.Exit(1)
	}
}

func run(probe string, workers int) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		HealthProbeBindAddress: probe,
		Metrics:                metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := ray.NewReconciler(ctx, mgr, ray.RayClusterReconcilerOptions{}).SetupWithManager(mgr, workers); err != nil {
		return fmt.Errorf("RayCluster controller: %w", err)
	}
	dash := &provider{dashboards: newDashboards(mgr.GetClient())}
	if err := ray.NewRayJobReconciler(ctx, mgr, ray.RayJobReconcilerOptions{}, dash).SetupWithManager(mgr, workers); err != nil {
		return fmt.Errorf("RayJob controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting KubeRay's RayCluster and RayJob controllers with the testbed dashboard")
	return mgr.Start(ctx)
}
