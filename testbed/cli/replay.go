package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/policies/sjf"
	"github.com/pickyman/pickyman/operator/pkg/policies/srtf"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/replay"
	"github.com/pickyman/pickyman/testbed/report"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// defaultReplayModel is the GPU model of the local cluster's pools that name none.
const defaultReplayModel = "A100"

// replayOptions are the flags of `pickyman replay`.
type replayOptions struct {
	simulateOptions
	// kubeconfig names an existing cluster to replay on; empty brings up the local one.
	kubeconfig string
	// nodes is the old name of --cluster.
	nodes     string
	name      string
	policy    string
	timeScale float64
	keep      bool
	processes bool
	compare   bool
	stuck     time.Duration
	kind      string
	// scheduler admits the jobs: replay.SchedulerPickyMan or replay.SchedulerKueue.
	scheduler string
	// startDelay and finishDelay are the cluster's control-plane latency at a job's start and
	// finish, in real time, which the simulator's side models (sim.Physics.StartDelay).
	startDelay, finishDelay time.Duration
	// suspendDelay is the cluster's latency from a suspend decision until the job's GPUs are
	// free, beyond the epoch's end and the checkpoint write (sim.Physics.SuspendDelay).
	suspendDelay time.Duration
}

// Control-plane latency of the local testbed cluster, in real time: from a start decision
// until the testbed agent starts the job's simulated containers, and from the end of its
// simulated training until the operator has seen the job finish. A fifo replay of 300
// contended jobs on the 2-core build machine measured 1.05 s for the two together
// (docs/testbed.md, "Fidelity under contention"), split evenly here.
//
// From a suspend decision until the job's GPUs are free (the Allocation write, the checkpoint
// request on the pods, the testbed agent's acknowledgement, the job's suspend, the
// training-operator's and kwok's deletion of its pods): 4.85 s, the mean over the 296
// suspends of three contended replays (srtf twice, kueue), whose own means were 3.76 s to
// 5.66 s. The testbed's trainers stop at once on a request to suspend now and kwok deletes
// pods without a grace period, so the simulator's side has no grace period of its own: this
// latency is all of it.
const (
	defaultStartDelay   = 525 * time.Millisecond
	defaultFinishDelay  = 525 * time.Millisecond
	defaultSuspendDelay = 4850 * time.Millisecond
)

// newReplayCommand returns `pickyman replay`: a trace on the testbed cluster (or any
// cluster that runs PickyMan), side by side with the simulator.
func newReplayCommand() *cobra.Command {
	o := replayOptions{simulateOptions: simulateOptions{cluster: "64x8", seed: 1, out: "out/replay"},
		name: "pickyman-replay", policy: "pickyman", timeScale: 100, compare: true, stuck: 3 * time.Minute,
		kind: replay.KindPyTorchJob, scheduler: replay.SchedulerPickyMan, startDelay: defaultStartDelay, finishDelay: defaultFinishDelay,
		suspendDelay: defaultSuspendDelay}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay a trace on a Kubernetes cluster running PickyMan and compare with the simulator",
		Long: "Bring up the local testbed cluster with the nodes of --cluster (or use the cluster of\n" +
			"--kubeconfig, where PickyMan's operator and testbed agent already run), submit one job per\n" +
			"trace job (a PyTorchJob; a RayJob or a TrainJob with --kind rayjob, trainjob or mixed) at its scaled arrival\n" +
			"time, follow them to completion, read every job's timeline back from the API server, and\n" +
			"write results.json, jobs.csv and report.html with the cluster's run and the simulator's on\n" +
			"the same jobs and seed, plus fidelity.md with the difference.\n\n" +
			"--cluster is a cluster spec, as simulate's: the local cluster's nodes and the simulator's\n" +
			"cluster. With --kubeconfig it describes that cluster's GPU nodes, for the simulator and the\n" +
			"GPU count; a kubeconfig passed to --cluster is refused. --nodes is its old name.",
		Example: "  pickyman replay --trace ../shared/traces/philly-adaptdl/philly.csv --window 0:48h --jobs 300 --cluster 64x8 --policy fifo\n" +
			"  pickyman replay --trace ../shared/traces/tiresias/60_job.csv --cluster 16x4 --time-scale 200 --policy tiresias\n" +
			"  pickyman replay --trace ../shared/traces/tiresias/60_job.csv --cluster 16x4 --kubeconfig ~/.kube/config",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.resolve(cmd.Flags()); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runReplay(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "replay on the cluster of this kubeconfig, where PickyMan's operator and testbed agent run (empty: bring up the local testbed cluster)")
	o.bindTraceFlags(f, "cluster", "the cluster, as simulate's --cluster: NODESxGPUS[:MODEL] pools joined by ',', or a cluster file; the local cluster's nodes "+
		"(MODEL one of "+strings.Join(cluster.KnownGPUModels(), ", ")+"; default "+defaultReplayModel+") and the simulator's cluster",
		"directory for results.json, jobs.csv, report.html and fidelity.md")
	f.StringVar(&o.nodes, "nodes", "", "old name of --cluster")
	must(f.MarkDeprecated("nodes", "use --cluster (the same cluster spec)"))
	f.StringVar(&o.name, "name", o.name, "name of the local cluster (brought up fresh and taken down after)")
	f.StringVar(&o.policy, "policy", o.policy, "the operator's policy ("+strings.Join(policies.Names(), ",")+")")
	f.Float64Var(&o.timeScale, "time-scale", o.timeScale, "trace seconds per real second")
	f.BoolVar(&o.keep, "keep-cluster", o.keep, "leave the local cluster up afterwards (not with --kubeconfig)")
	f.BoolVar(&o.processes, "pickyman-processes", false, "local cluster: run PickyMan's operator and agent as local processes instead of installing them on a real node (development; not with --kubeconfig)")
	f.BoolVar(&o.compare, "compare", o.compare, "also simulate the same jobs and write the side-by-side")
	f.DurationVar(&o.startDelay, "start-delay", o.startDelay, "the cluster's latency from a start decision until the job's containers start, in real time, which the simulator's side adds to every start and resume (scaled by --time-scale; the default was measured on the local cluster)")
	f.DurationVar(&o.finishDelay, "finish-delay", o.finishDelay, "the cluster's latency from the end of a job's training until its scheduler has seen it finish, in real time, which the simulator's side adds to every job (scaled by --time-scale; the default was measured on the local cluster)")
	f.DurationVar(&o.suspendDelay, "suspend-delay", o.suspendDelay, "the cluster's latency from a suspend decision until the job's GPUs are free, beyond the run to the epoch's end and the checkpoint write, in real time, which the simulator's side adds to every suspend (scaled by --time-scale; the default was measured on the local cluster)")
	f.DurationVar(&o.stuck, "stuck-after", o.stuck, "stop with a diagnosis when no job changed phase for this long (real time)")
	f.Float64Var(&o.elastic, "elastic", o.elastic, "share of the jobs of 2 GPUs or more that are elastic PyTorchJobs (0 to 1; the simulator's choice, docs/simulator.md)")
	f.Int32Var(&o.grow, "elastic-grow", 1, "how many times its request an elastic job may grow to (1: back to its request)")
	f.StringVar(&o.scheduler, "scheduler", o.scheduler, "what admits the jobs: "+strings.Join(replay.Schedulers(), ", ")+
		" (kueue: real Kueue v0.17.0 with one ClusterQueue of the cluster's GPUs, preemption withinClusterQueue LowerPriority; the simulator runs its kueue and pickyman policies beside it)")
	f.StringVar(&o.kind, "kind", o.kind, "the kind each trace job is submitted as: "+strings.Join(replay.Kinds(), ", ")+
		" (mixed: a PyTorchJob, a RayJob and a TrainJob in turn; RayJobs need KubeRay, TrainJobs the Kubeflow Trainer and JobSet, which the local cluster runs)")
	return cmd
}

func runReplay(ctx context.Context, o replayOptions, stdout, stderr io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	elastic := sim.Elasticity{Share: o.elastic, Grow: o.grow}
	size, err := traces.ParseCluster(o.cluster)
	if err != nil {
		return err
	}
	if o.kubeconfig == "" {
		// The local cluster's nodes carry the model's GPU feature discovery labels.
		for _, p := range size.Pools {
			if err := cluster.CheckGPUModel(cmp.Or(p.GPUModel, defaultReplayModel)); err != nil {
				return fmt.Errorf("--cluster %s: %w", o.cluster, err)
			}
		}
	}
	jobs, meta, err := loadJobs(o.simulateOptions, size)
	if err != nil {
		return err
	}
	if jobs, err = selectJobs(jobs, o.window, o.jobs); err != nil {
		return err
	}
	gpus := int32(size.GPUs())

	// 1. The cluster: the local testbed brought up for the replay, or the one of --kubeconfig.
	kubeconfig, opts, local := o.kubeconfig, cluster.Options{}, o.kubeconfig == ""
	if local {
		var down func()
		if opts, kubeconfig, down, err = o.upLocal(ctx, size, jobs, stderr); err != nil {
			return err
		}
		defer down()
	}
	clients, c, err := replayClients(kubeconfig)
	if err != nil {
		return err
	}

	// 2. The replay.
	ro := replay.Options{Jobs: jobs, Name: o.name, Policy: o.policy, GPUs: gpus, TimeScale: o.timeScale, Kind: o.kind,
		Namespace: "replay-" + time.Now().UTC().Format("20060102-150405"), Stuck: o.stuck, Progress: stderr,
		Elastic: elastic, Seed: o.seed, MaxNode: maxNodeGPUs(size)}
	// The oracle policies sort by the true run time, which the simulator knows; on the
	// cluster they read it from the jobs' declared estimates.
	ro.Estimates = o.policy == sjf.Name || o.policy == srtf.Name
	if o.scheduler == replay.SchedulerKueue {
		ro.Scheduler, ro.Policy, ro.KueueFlavors = o.scheduler, kueueRunName, replay.KueueFlavors(size, defaultReplayModel)
	}
	if local {
		ro.Components = func() string { return componentState(opts) }
	}
	fmt.Fprintf(stderr, "replaying %d jobs on %s under %s at time scale %g\n", len(jobs), size, ro.Policy, o.timeScale)
	run, err := replay.Run(ctx, replay.Clients{Client: c, Kube: clients.Kube, Dynamic: clients.Dynamic}, ro)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "replay finished in %v of wall time\n", run.Wall.Round(time.Second))
	runs := []*metrics.Run{run}

	// 3. The simulator on the same jobs.
	if o.compare && o.scheduler == replay.SchedulerKueue {
		return o.reportKueue(ctx, size, jobs, meta, run, stdout, stderr)
	}
	if o.compare {
		simRun, err := o.simulateSame(ctx, size, jobs, elastic)
		if err != nil {
			return err
		}
		runs = []*metrics.Run{simRun, run}
	}

	// 4. The report, and the fidelity table beside the simulator.
	meta.Cluster, meta.Seed, meta.GPUs = size.String(), o.seed, gpus
	if o.elastic > 0 {
		meta.Elastic, meta.ElasticGrow = o.elastic, o.grow
	}
	res, err := report.Write(o.out, meta, runs)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, res.Table())
	if o.compare {
		fid := Fidelity(metrics.Summarize(runs[0]), metrics.Summarize(run), o.timeScale, run.Wall)
		fid += fmt.Sprintf("simulator's control-plane delays (--start-delay, --finish-delay, --suspend-delay): %v, %v and %v of real time, %v, %v and %v of trace time\n",
			o.startDelay, o.finishDelay, o.suspendDelay, o.traceTime(o.startDelay), o.traceTime(o.finishDelay), o.traceTime(o.suspendDelay))
		if d, n := controlPlaneDelay(runs[0], run, o.traceTime(o.startDelay+o.finishDelay), o.timeScale); n > 0 {
			fid += fmt.Sprintf("control-plane latency measured in this replay (start and finish together, over the %d jobs that ran once on both sides): %v of real time\n",
				n, d.Round(10*time.Millisecond))
		}
		if c, n := meanSuspendDelay(run, o.timeScale); n > 0 {
			sd, _ := meanSuspendDelay(runs[0], o.timeScale)
			fid += fmt.Sprintf("suspend latency measured in this replay (decision to GPUs free, mean over %d suspends): %v of real time (the simulator's: %v)\n",
				n, c.Round(10*time.Millisecond), sd.Round(10*time.Millisecond))
		}
		if err := os.WriteFile(filepath.Join(o.out, "fidelity.md"), []byte(fid), 0o644); err != nil {
			return err
		}
		fmt.Fprint(stdout, fid)
	}
	fmt.Fprintf(stderr, "wrote %s/results.json, jobs.csv, report.html and fidelity.md\n", o.out)
	return nil
}

// resolve reads the flags whose meaning depends on which were given: --nodes is the old name
// of --cluster, and the local cluster's own flags mean nothing with --kubeconfig.
func (o *replayOptions) resolve(f *pflag.FlagSet) error {
	if f.Changed("nodes") {
		if f.Changed("cluster") {
			return errors.New("--nodes is the old name of --cluster: pass only --cluster")
		}
		o.cluster = o.nodes
	}
	if o.kubeconfig != "" {
		for _, name := range []string{"name", "keep-cluster", "pickyman-processes"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s is for the local cluster; with --kubeconfig the replay neither brings a cluster up nor takes it down", name)
			}
		}
	}
	return nil
}

// validate checks the flags that need no trace or cluster.
func (o replayOptions) validate() error {
	if err := checkClusterSpec(o.cluster); err != nil {
		return err
	}
	if o.kubeconfig != "" {
		if st, err := os.Stat(o.kubeconfig); err != nil {
			return fmt.Errorf("--kubeconfig %s: no such file", o.kubeconfig)
		} else if st.IsDir() {
			return fmt.Errorf("--kubeconfig %s: a directory, not a kubeconfig file", o.kubeconfig)
		}
	}
	if !slices.Contains(policies.Names(), o.policy) {
		return fmt.Errorf("unknown policy %q (registered: %s)", o.policy, strings.Join(policies.Names(), ", "))
	}
	if _, err := replay.KindOf(o.kind, 0); err != nil {
		return fmt.Errorf("--kind: %w", err)
	}
	if err := o.validateScheduler(); err != nil {
		return err
	}
	if o.elastic < 0 || o.elastic > 1 {
		return fmt.Errorf("--elastic %v: want a share between 0 and 1", o.elastic)
	}
	if o.grow < 1 {
		return fmt.Errorf("--elastic-grow %d: want 1 or more", o.grow)
	}
	if o.elastic > 0 && o.kind != replay.KindPyTorchJob {
		return fmt.Errorf("--elastic: elastic jobs are PyTorchJobs; --kind %s", o.kind)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--start-delay", o.startDelay}, {"--finish-delay", o.finishDelay}, {"--suspend-delay", o.suspendDelay}} {
		if d.v < 0 || d.v > time.Hour {
			return fmt.Errorf("%s %v: want between 0 and 1h", d.flag, d.v)
		}
	}
	return nil
}

// upLocal brings the local testbed up fresh for the replay: the trace's pools as kwok
// nodes, and PickyMan installed by its installer on a real node (images from make images),
// or as local processes with --pickyman-processes. down takes it down again, unless --keep.
func (o replayOptions) upLocal(ctx context.Context, size traces.Cluster, jobs []traces.Job, stderr io.Writer) (opts cluster.Options, kubeconfig string, down func(), err error) {
	opts = cluster.DefaultOptions("")
	opts.Name, opts.Log = o.name, stderr
	opts.Kueue = o.scheduler == replay.SchedulerKueue
	for _, p := range size.Pools {
		opts.Pools = append(opts.Pools, cluster.Pool{Nodes: p.Count, GPUsPerNode: int(p.GPUs), Model: cmp.Or(p.GPUModel, defaultReplayModel)})
	}
	opts.PickyMan = &cluster.PickyMan{Config: replay.OperatorConfig(o.policy, jobs, o.timeScale), TimeScale: o.timeScale, Seed: o.seed,
		Installed: !o.processes}
	if !o.processes {
		opts.RealNodes = 1
	}
	if err := cluster.Down(ctx, opts); err != nil {
		return opts, "", nil, fmt.Errorf("clear cluster %s: %w", o.name, err)
	}
	info, err := cluster.Up(ctx, opts)
	if err != nil {
		return opts, "", nil, err
	}
	down = func() {}
	if !o.keep {
		down = func() {
			if err := cluster.Down(context.Background(), opts); err != nil {
				fmt.Fprintf(stderr, "taking cluster %s down: %v\n", o.name, err)
			}
		}
	}
	return opts, info.Kubeconfig, down, nil
}

// replayClients are the clients of the cluster at kubeconfig, with the replay's scheme.
func replayClients(kubeconfig string) (*cluster.Clients, client.Client, error) {
	clients, err := cluster.NewClients(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	scheme, err := replay.Scheme()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(clients.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	return clients, c, nil
}

// simulateSame runs the replay's policy in the simulator on the same jobs.
func (o replayOptions) simulateSame(ctx context.Context, size traces.Cluster, jobs []traces.Job, elastic sim.Elasticity) (*metrics.Run, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Elastic = o.seed, elastic
	cfg.Physics.StartDelay, cfg.Physics.FinishDelay = o.traceTime(o.startDelay), o.traceTime(o.finishDelay)
	// The testbed has no grace period (its trainers stop at once, kwok deletes at once): the
	// cluster's whole suspend latency is the control plane's.
	cfg.Physics.Grace, cfg.Physics.SuspendDelay = 0, o.traceTime(o.suspendDelay)
	factory := policies.ByName
	comparison, err := sim.NewComparison(size, jobs, []string{o.policy}, factory, cfg)
	if err != nil {
		return nil, err
	}
	simRuns, err := comparison.Run(ctx)
	if err != nil {
		return nil, err
	}
	simRuns[0].Policy = o.policy + " (simulator)"
	return simRuns[0], nil
}

// controlPlaneDelay measures a replay's control-plane latency per job, in real time: the mean,
// over the jobs that ran once (no preemption, no resize) on both sides, of the time the
// cluster held their GPUs beyond what the simulator held without its own delays (simDelay, the
// sum of its start and finish delays in trace time), at time scale scale. It returns the
// number of jobs measured, 0 if none.
func controlPlaneDelay(simRun, clusterRun *metrics.Run, simDelay time.Duration, scale float64) (time.Duration, int) {
	held := make(map[string]time.Duration, len(simRun.Jobs))
	for _, j := range simRun.Jobs {
		if j.Preemptions == 0 && j.Resizes == 0 && !j.Rejected {
			held[j.ID] = j.Held - simDelay
		}
	}
	var sum time.Duration
	var n int
	for _, j := range clusterRun.Jobs {
		h, ok := held[j.ID]
		if !ok || j.Preemptions != 0 || j.Resizes != 0 || j.Rejected {
			continue
		}
		sum += j.Held - h
		n++
	}
	if n == 0 || scale <= 0 {
		return 0, 0
	}
	return time.Duration(float64(sum) / float64(n) / scale), n
}

// meanSuspendDelay is a run's mean time from a suspend decision until the job's GPUs were
// free, over its suspends (preemptions and resizes), in real time at time scale scale, and the
// number of suspends; 0 if none.
func meanSuspendDelay(r *metrics.Run, scale float64) (time.Duration, int) {
	var sum time.Duration
	var n int
	for _, j := range r.Jobs {
		sum += j.SuspendDelay
		n += int(j.Preemptions + j.Resizes)
	}
	if n == 0 || scale <= 0 {
		return 0, 0
	}
	return time.Duration(float64(sum) / float64(n) / scale), n
}

// traceTime is real time d in trace time.
func (o replayOptions) traceTime(d time.Duration) time.Duration {
	return time.Duration(float64(d) * o.timeScale)
}

// Fidelity is the side-by-side of the simulator's and the cluster's summaries.
func Fidelity(simS, clusterS metrics.Summary, scale float64, wall time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| metric | simulator | cluster | difference |\n|---|---|---|---|\n")
	row := func(name string, s, c float64) {
		if s == 0 {
			// No relative difference from zero: say the absolute one.
			fmt.Fprintf(&b, "| %s | %.0f | %.0f | %+.0f |\n", name, s, c, c-s)
			return
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %+.1f%% |\n", name, s, c, (c-s)/s*100)
	}
	row("mean JCT (s)", simS.JCT.Mean, clusterS.JCT.Mean)
	row("mean wait (s)", simS.Wait.Mean, clusterS.Wait.Mean)
	row("mean queueing (s)", simS.Queueing.Mean, clusterS.Queueing.Mean)
	row("p99 wait (s)", simS.Wait.P99, clusterS.Wait.P99)
	row("makespan (s)", simS.Makespan, clusterS.Makespan)
	row("preemptions", float64(simS.Preemptions), float64(clusterS.Preemptions))
	fmt.Fprintf(&b, "\ntime scale %g; cluster replay wall time %v\n", scale, wall.Round(time.Second))
	return b.String()
}

// componentState says which of the local cluster's components run, and where their logs are.
func componentState(o cluster.Options) string {
	var b strings.Builder
	b.WriteString("components:\n")
	pids := o.ClusterPids()
	for _, c := range []string{cluster.ComponentOperator, cluster.ComponentAgent, "training-operator", cluster.KueueComponent, "kube-apiserver", "kwok-controller"} {
		state := "NOT RUNNING"
		if pid := pids[c]; pid > 0 {
			state = fmt.Sprintf("running (pid %d)", pid)
		}
		fmt.Fprintf(&b, "  %-18s %s\n", c, state)
	}
	fmt.Fprintf(&b, "logs: %s/*.log and %s/logs/\n", o.Workdir(), o.Workdir())
	return b.String()
}

// maxNodeGPUs is the GPUs of the cluster's largest node (what the simulator reshapes gangs by).
func maxNodeGPUs(c traces.Cluster) int32 {
	var m int32
	for _, p := range c.Pools {
		m = max(m, p.GPUs)
	}
	return m
}

// checkClusterSpec refuses what replay's --cluster used to take, an existing cluster's
// kubeconfig or "local", naming the flag that takes it now. The spec itself is read later
// (traces.ParseCluster).
func checkClusterSpec(spec string) error {
	switch {
	case spec == "local":
		return errors.New("--cluster local: the local testbed cluster is the default; --cluster is the cluster spec (e.g. 64x8), as simulate's")
	case isKubeconfig(spec):
		return fmt.Errorf("--cluster %s: a kubeconfig; pass it as --kubeconfig %s (--cluster is the cluster spec, e.g. 64x8, as simulate's)", spec, spec)
	}
	return nil
}

// isKubeconfig reports whether path names a file that looks like a kubeconfig: YAML with
// "kind: Config" or a "clusters:" key. Cluster files are CSV, which has neither.
func isKubeconfig(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	for _, line := range strings.Split(string(head[:n]), "\n") {
		line = strings.TrimSpace(line)
		if line == "kind: Config" || strings.HasPrefix(line, "clusters:") {
			return true
		}
	}
	return false
}
