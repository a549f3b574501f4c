package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/report"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// simulateOptions are the flags of `pickyman simulate`.
type simulateOptions struct {
	trace    string
	format   string
	cluster  string
	policies string
	seed     int64
	out      string
	check    bool
	ideal    bool
	window   string
	jobs     int
	tick     time.Duration
	noise    float64
	elastic  float64
	grow     int32
	// load is the offered load of the generated trace on the cluster's GPUs; 0 keeps
	// traces.DefaultGenerateConfig's load and size.
	load float64
	// controlStart, controlFinish and controlSuspend are the simulator's control-plane delays
	// (trace time).
	controlStart, controlFinish, controlSuspend time.Duration
	// grace is the physics' grace period of a suspend now (trace time).
	grace time.Duration
}

// defaultSimCluster is simulate's cluster: 128 GPUs, half the 256 the generated default
// trace is sized for, so that it offers twice what the cluster serves over its arrival
// window; queues form and the policies differ (on 256 GPUs hardly anything waits).
const defaultSimCluster = "16x8"

// allPolicies asks --policies for every registered policy, ablations included.
const allPolicies = "all"

// newSimulateCommand returns `pickyman simulate`: every policy on one trace, side by side.
func newSimulateCommand() *cobra.Command {
	o := simulateOptions{cluster: defaultSimCluster, seed: 1, out: "out/sim", tick: sim.DefaultConfig().Tick, grace: sim.DefaultPhysics().Grace,
		noise: sim.DefaultPhysics().NoiseSigma}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate scheduling policies on a trace and write a side-by-side report",
		Long: "Replay a trace on a cluster under each policy, concurrently, with the operator's own\n" +
			"scheduling core and checkpoint-aware preemption physics (docs/simulator.md). Without\n" +
			"--trace it uses the generated default trace (or one that offers --load on the cluster).\n" +
			"Without --policies it runs the baselines and PickyMan (--policies all adds PickyMan's\n" +
			"ablations). Writes results.json, jobs.csv and report.html to --out and prints a verdict\n" +
			"(PickyMan against the best baseline) and the table.",
		Example: "  pickyman simulate --out out/demo\n" +
			"  pickyman simulate --policies all --cluster 8x8 --load 1.2 --out out/ablations\n" +
			"  pickyman simulate --trace ../shared/traces/tiresias/60_job.csv --cluster 16x4 --check --out out/t60\n" +
			"  pickyman simulate --trace ../shared/traces/philly-adaptdl/philly.csv --cluster 64x8 --window 0:720h",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC()
			return runSimulate(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.bindTraceFlags(f, "cluster", "cluster: NODESxGPUS[:MODEL] pools joined by ',', or a cluster file",
		"directory for results.json, jobs.csv and report.html")
	f.StringVar(&o.policies, "policies", o.policies, "comma-separated policies; empty runs the baselines and pickyman ("+
		strings.Join(defaultPolicies(), ",")+"), 'all' every registered one (also "+strings.Join(ablations(), ",")+")")
	f.Float64Var(&o.load, "load", o.load, "without --trace: generate a trace that offers this load on the cluster's GPUs over its arrival window (0: the default trace, sized for 256 GPUs at load 1)")
	f.BoolVar(&o.check, "check", o.check, "check invariants at every cycle (slower)")
	f.BoolVar(&o.ideal, "ideal", o.ideal, "free preemption and no start cost, as most research simulators assume")
	f.DurationVar(&o.tick, "tick", o.tick, "also poll: a scheduling cycle this often while jobs wait (0: cycles only at events and the policy's wake-ups)")
	f.Float64Var(&o.noise, "noise", o.noise, "sigma of the per-job lognormal noise on overheads and traffic (0: none)")
	f.DurationVar(&o.controlStart, "start-delay", 0, "control-plane latency from a start or resume decision until the job's containers start, in trace time (a cluster's; replay sets it from its own)")
	f.DurationVar(&o.controlFinish, "finish-delay", 0, "control-plane latency from the end of a job's training until its GPUs are free, in trace time")
	f.DurationVar(&o.controlSuspend, "suspend-delay", 0, "control-plane latency from a suspend decision until the job's GPUs are free, beyond the grace period, the run to the epoch's end and the checkpoint write, in trace time")
	f.DurationVar(&o.grace, "grace", o.grace, "grace period of a suspend now: from the decision until the stopped job's GPUs are free, in trace time (a replay's simulator side uses 0: the testbed has none)")
	f.Float64Var(&o.elastic, "elastic", o.elastic, "share of the jobs of 2 GPUs or more that are elastic (0 to 1; docs/simulator.md)")
	f.Int32Var(&o.grow, "elastic-grow", 1, "how many times its request an elastic job may grow to (1: back to its request)")
	return cmd
}

// bindTraceFlags registers the flags that pick the jobs, the cluster (under clusterFlag), the
// seed and the output directory; simulate and replay share them.
func (o *simulateOptions) bindTraceFlags(f *pflag.FlagSet, clusterFlag, clusterUsage, outUsage string) {
	f.StringVar(&o.trace, "trace", o.trace, "trace file; empty uses the generated default trace")
	f.StringVar(&o.format, "format", o.format, "trace format ("+traces.FormatNames()+"); empty detects it")
	f.StringVar(&o.cluster, clusterFlag, o.cluster, clusterUsage)
	f.Int64Var(&o.seed, "seed", o.seed, "seed for synthesized trace fields, the generated trace and overhead noise")
	f.StringVar(&o.out, "out", o.out, outUsage)
	f.StringVar(&o.window, "window", o.window, "FROM:TO: only jobs submitted in [FROM, TO) (durations like 24h or seconds), shifted to start at 0")
	f.IntVar(&o.jobs, "jobs", o.jobs, "only the first N jobs in submit order (0: all)")
}

func runSimulate(ctx context.Context, o simulateOptions, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cluster, err := traces.ParseCluster(o.cluster)
	if err != nil {
		return err
	}
	jobs, meta, err := loadJobs(o, cluster)
	if err != nil {
		return err
	}
	if jobs, err = selectJobs(jobs, o.window, o.jobs); err != nil {
		return err
	}
	if err := checkPoolModels(cluster, jobs); err != nil {
		return err
	}
	names := defaultPolicies()
	switch o.policies {
	case "":
	case allPolicies:
		names = policies.Names()
	default:
		names = strings.Split(o.policies, ",")
	}
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if !slices.Contains(policies.Names(), names[i]) {
			return fmt.Errorf("unknown policy %q (registered: %s)", names[i], strings.Join(policies.Names(), ", "))
		}
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Check, cfg.Tick = o.seed, o.check, o.tick
	cfg.Physics.Ideal, cfg.Physics.NoiseSigma = o.ideal, o.noise
	if o.controlStart < 0 || o.controlFinish < 0 || o.controlSuspend < 0 || o.grace < 0 {
		return fmt.Errorf("--start-delay %v, --finish-delay %v, --suspend-delay %v, --grace %v: want each 0 or more", o.controlStart, o.controlFinish, o.controlSuspend, o.grace)
	}
	cfg.Physics.StartDelay, cfg.Physics.FinishDelay, cfg.Physics.SuspendDelay = o.controlStart, o.controlFinish, o.controlSuspend
	cfg.Physics.Grace = o.grace
	if o.elastic < 0 || o.elastic > 1 {
		return fmt.Errorf("--elastic %v: want a share between 0 and 1", o.elastic)
	}
	if o.grow < 1 {
		return fmt.Errorf("--elastic-grow %d: want 1 or more", o.grow)
	}
	if o.load < 0 {
		return fmt.Errorf("--load %v: want a positive offered load (0: the default trace)", o.load)
	}
	cfg.Elastic.Share, cfg.Elastic.Grow = o.elastic, o.grow
	factory := policies.ByName
	cmp, err := sim.NewComparison(cluster, jobs, names, factory, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "simulating %d jobs on %s under %s\n", len(jobs), o.cluster, strings.Join(names, ", "))
	stop := showProgress(stderr, cmp)
	runs, err := cmp.Run(ctx)
	stop()
	if err != nil {
		return err
	}
	for _, n := range cluster.Pools {
		meta.GPUs += int32(n.Count) * n.GPUs
	}
	meta.Cluster, meta.Seed, meta.Ideal, meta.Elastic, meta.ElasticGrow = o.cluster, o.seed, o.ideal, o.elastic, o.grow
	res, err := report.Write(o.out, meta, runs)
	if err != nil {
		return err
	}
	if v := res.VerdictText(); v != "" {
		fmt.Fprintln(stdout, v)
	}
	fmt.Fprint(stdout, res.Table())
	fmt.Fprintf(stderr, "wrote %s/results.json, jobs.csv and report.html\n", o.out)
	return nil
}

// loadJobs reads the trace, or generates the default one.
// checkPoolModels refuses a pool whose GPU model is neither a known one
// (cluster.KnownGPUModels) nor one that a job of the trace asks for: in the simulator a model
// only matches jobs to nodes, so such a name is a typo that leaves the pool to the jobs that
// ask for no model. The error lists both.
func checkPoolModels(c traces.Cluster, jobs []traces.Job) error {
	var asked []string
	for _, j := range jobs {
		if j.GPUModel != "" && !slices.Contains(asked, j.GPUModel) {
			asked = append(asked, j.GPUModel)
		}
	}
	for _, p := range c.Pools {
		m := p.GPUModel
		if m == "" || slices.Contains(asked, m) || cluster.CheckGPUModel(m) == nil {
			continue
		}
		want := "none"
		if len(asked) > 0 {
			slices.Sort(asked)
			want = strings.Join(asked, ", ")
		}
		return fmt.Errorf("pool %dx%d:%s: unknown GPU model %q (known: %s; the trace's jobs ask for: %s)",
			p.Count, p.GPUs, m, m, strings.Join(cluster.KnownGPUModels(), ", "), want)
	}
	return nil
}

func loadJobs(o simulateOptions, cluster traces.Cluster) ([]traces.Job, report.Meta, error) {
	if o.trace == "" {
		cfg := traces.DefaultGenerateConfig()
		cfg.Seed = o.seed
		if o.load > 0 {
			cfg.Load, cfg.ClusterGPUs = o.load, cluster.GPUs()
		}
		jobs := traces.Generate(cfg)
		desc := fmt.Sprintf("generated (%d jobs, seed %d, load %.2f on %d GPUs)", cfg.Jobs, cfg.Seed, cfg.Load, cfg.ClusterGPUs)
		if g := cluster.GPUs(); g > 0 && g != cfg.ClusterGPUs {
			desc = fmt.Sprintf("generated (%d jobs, seed %d, load %.2f on %d GPUs, so %.2f on this cluster's %d)",
				cfg.Jobs, cfg.Seed, cfg.Load, cfg.ClusterGPUs, cfg.Load*float64(cfg.ClusterGPUs)/float64(g), g)
		}
		meta := report.Meta{Trace: desc,
			Format: string(traces.FormatPickyman), SynthesizedFields: report.Synthesized(jobs)}
		return jobs, meta, nil
	}
	opts := traces.Options{Format: traces.Format(o.format), Seed: o.seed}
	r, err := traces.Open(o.trace, opts)
	if err != nil {
		return nil, report.Meta{}, err
	}
	defer r.Close()
	jobs, err := traces.Collect(r)
	if err != nil {
		return nil, report.Meta{}, err
	}
	return jobs, report.Meta{Trace: o.trace, Format: string(r.Format()), SynthesizedFields: report.Synthesized(jobs)}, nil
}

// defaultPolicies returns the registered policies but PickyMan's ablations: the baselines
// and PickyMan.
func defaultPolicies() []string {
	var out []string
	for _, n := range policies.Names() {
		if !strings.HasPrefix(n, report.Subject+"-") {
			out = append(out, n)
		}
	}
	return out
}

// ablations returns PickyMan's registered variants.
func ablations() []string {
	var out []string
	for _, n := range policies.Names() {
		if strings.HasPrefix(n, report.Subject+"-") {
			out = append(out, n)
		}
	}
	return out
}

// selectJobs applies --window and --jobs.
func selectJobs(jobs []traces.Job, window string, n int) ([]traces.Job, error) {
	slices.SortStableFunc(jobs, func(a, b traces.Job) int { return int(a.Submit - b.Submit) })
	if window != "" {
		from, to, ok := strings.Cut(window, ":")
		if !ok {
			return nil, fmt.Errorf("--window %q: want FROM:TO", window)
		}
		lo, err := parseOffset(from)
		if err != nil {
			return nil, fmt.Errorf("--window %q: %w", window, err)
		}
		hi, err := parseOffset(to)
		if err != nil {
			return nil, fmt.Errorf("--window %q: %w", window, err)
		}
		var in []traces.Job
		for _, j := range jobs {
			if j.Submit >= lo && j.Submit < hi {
				j.Submit -= lo
				in = append(in, j)
			}
		}
		jobs = in
	}
	if n > 0 && n < len(jobs) {
		jobs = jobs[:n]
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("no jobs to simulate")
	}
	return jobs, nil
}

// parseOffset reads a duration (24h, 90m) or a number of seconds.
func parseOffset(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(v * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// showProgress draws a progress bar per policy on w while the comparison runs, if w is a
// terminal. The returned function stops it.
func showProgress(w io.Writer, cmp *sim.Comparison) func() {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			draw(f, cmp)
			select {
			case <-done:
				draw(f, cmp)
				fmt.Fprintln(f)
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

func draw(w io.Writer, cmp *sim.Comparison) {
	var b strings.Builder
	b.WriteString("\r")
	for i, p := range cmp.Progress() {
		const width = 10
		n := int(p * width)
		fmt.Fprintf(&b, "%s [%s%s] %3.0f%%  ", cmp.Names()[i], strings.Repeat("#", n), strings.Repeat(".", width-n), p*100)
	}
	fmt.Fprint(w, b.String())
}
