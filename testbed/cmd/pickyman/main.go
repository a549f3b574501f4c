// Command pickyman is the testbed's command line: it simulates policies on traces,
// generates traces, and brings the local Kubernetes testbed cluster up and down.
package main

import (
	"os"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pickyman/pickyman/testbed/cli"
)

func main() {
	// The clients it makes log through controller-runtime: errors only, to stderr (without a
	// logger, controller-runtime prints a warning and a stack trace in the middle of a replay).
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(0), textlogger.Output(os.Stderr))))
	if err := cli.NewRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
