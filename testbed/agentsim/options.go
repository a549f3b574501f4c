package agentsim

import (
	"context"
	"flag"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/pickyman/pickyman/agent/pkg/app"
	"github.com/pickyman/pickyman/agent/pkg/metrics"
)

// Options configure the testbed agent (command pickyman-testbed-agent).
type Options struct {
	NodeSelector string
	TimeScale    float64
	Seed         int64
	// Serial is the serial fraction of an elastic job's epoch time (Physics.Serial).
	Serial      float64
	MetricsAddr string
}

// Flags registers the options on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.NodeSelector, "testbed-node-selector", "type=kwok", "label selector of the fake nodes to serve")
	fs.Float64Var(&o.TimeScale, "time-scale", 1, "trace seconds per real second")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the per-job noise")
	fs.Float64Var(&o.Serial, "testbed-serial", DefaultPhysics().Serial,
		"serial fraction (0..1) of an elastic job's epoch time: on W workers of reference size R an epoch takes epoch-time x (serial + (1 - serial) x R / W)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":9400", "address of the Prometheus metrics endpoint (\"0\" disables it)")
}

// Physics is the simulator's physics with the flags' overrides.
func (o Options) Physics() (Physics, error) {
	ph := DefaultPhysics()
	if o.Serial < 0 || o.Serial > 1 {
		return ph, fmt.Errorf("--testbed-serial %v: want a fraction within 0..1", o.Serial)
	}
	ph.Serial = o.Serial
	return ph, nil
}

// Main parses args and runs the testbed agent until SIGINT or SIGTERM.
func Main(args []string) int {
	var o Options
	return app.Command("pickyman-testbed-agent", args, o.Flags, func(ctx context.Context, log logr.Logger) error {
		return Run(ctx, o, log)
	})
}

// Run serves the fake nodes that o.NodeSelector selects, with the agent's metrics.
func Run(ctx context.Context, o Options, log logr.Logger) error {
	sel, err := labels.Parse(o.NodeSelector)
	if err != nil {
		return fmt.Errorf("--testbed-node-selector: %w", err)
	}
	ph, err := o.Physics()
	if err != nil {
		return err
	}
	kube, err := app.NewClient()
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	tb := New(kube, clock.RealClock{}, log.WithName("testbed"), sel, ph, o.TimeScale, o.Seed)
	col := metrics.New(tb.Backends, tb.Registry)
	tb.Coord.OnAck = col.Acked
	errc := make(chan error, 2)
	go func() { errc <- tb.Run(ctx) }()
	go func() { errc <- app.ServeMetrics(ctx, o.MetricsAddr, col) }()
	log.Info("testbed agent running", "nodes", o.NodeSelector, "timeScale", o.TimeScale)
	return app.Wait(ctx, errc)
}
