// Command pickyman-operator runs the PickyMan operator: it admits, places, preempts and
// resumes Kubeflow training jobs under the configured policy (docs/operator.md).
package main

import (
	"flag"
	"os"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pickyman/pickyman/operator/internal/app"
)

func main() {
	var f app.Flags
	f.Bind(flag.CommandLine)
	logCfg := textlogger.NewConfig()
	logCfg.AddFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(textlogger.NewLogger(logCfg))
	if err := app.Run(ctrl.SetupSignalHandler(), f); err != nil {
		ctrl.Log.Error(err, "operator stopped")
		os.Exit(1)
	}
}
