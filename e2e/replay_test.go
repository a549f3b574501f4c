//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/replay"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// A short trace replayed on the cluster under each policy: the operator is restarted with the
// policy's replay configuration, the jobs run on three nodes of their own GPU model, every job
// finishes, and the cluster's timeline read back from the API server is close to the
// simulator's on the same jobs. A last spec replays it while the operator and the agent are
// killed (SIGKILL) at random moments and restarted.
var _ = ginkgo.Describe("Trace replay", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "replay"), func() {
	const (
		model       = "T4" // no other spec uses this GPU model
		nodes       = 3
		gpusPerNode = 8
	)
	var jobs []traces.Job

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		built := cluster.BuildNodes([]cluster.Pool{{Name: "e2e-t4-" + suite.runID, Nodes: nodes, GPUsPerNode: gpusPerNode, Model: model}})
		var names []string
		for _, n := range built {
			names = append(names, n.Name)
		}
		_, err := suite.clients.EnsureNodes(ctx, built)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(suite.clients.WaitNodesReady(ctx, names, util.Timeout)).To(gomega.Succeed())
		// Twelve jobs, one a trace minute (a real second), of 4 to 16 GPUs and 6 to 16 trace
		// minutes: more than the 24 GPUs can run at once.
		shapes := [][2]int32{{1, 8}, {1, 4}, {2, 8}, {1, 8}, {1, 4}, {1, 8}, {2, 4}, {1, 8}, {1, 4}, {2, 8}, {1, 8}, {1, 4}}
		for i, s := range shapes {
			epochs := int32(3 + i%3*2)
			jobs = append(jobs, traces.Job{ID: fmt.Sprintf("e2e-%d", i), Submit: time.Duration(i) * time.Minute,
				Workers: s[0], GPUsPerWorker: s[1], GPUs: s[0] * s[1], GPUModel: model, Model: "resnet50",
				Epochs: epochs, EpochTime: 2 * time.Minute, Duration: time.Duration(epochs) * 2 * time.Minute,
				DatasetBytes: 10e9, CheckpointBytes: 1e9})
		}
	})

	ginkgo.AfterAll(func(ctx context.Context) {
		if suite.opts.PickyMan == nil {
			return
		}
		ginkgo.By("restoring the suite's operator configuration")
		suite.opts.PickyMan.Config = operatorConfig()
		gomega.Expect(suite.opts.StopComponent(cluster.ComponentOperator, false)).To(gomega.Succeed())
		gomega.Expect(suite.opts.StartOperator(ctx, suite.clients)).To(gomega.Succeed())
	})

	// Every policy the operator can run without an oracle: sjf and srtf order by true job
	// lengths, which only the simulator knows.
	for _, policy := range []string{"fifo", "tiresias", "kueue", "pickyman"} {
		ginkgo.It("replays the trace under "+policy+" and reads every job's timeline back", func(ctx context.Context) {
			ginkgo.By("restarting the operator with the " + policy + " replay configuration")
			conf := replay.OperatorConfig(policy, jobs, timeScale)
			suite.opts.PickyMan.Config = conf
			gomega.Expect(suite.opts.StopComponent(cluster.ComponentOperator, false)).To(gomega.Succeed())
			gomega.Expect(suite.opts.StartOperator(ctx, suite.clients)).To(gomega.Succeed())

			ginkgo.By("replaying")
			run, err := replay.Run(ctx, replay.Clients{Client: suite.client, Kube: suite.clients.Kube}, replay.Options{
				Jobs: jobs, Name: "e2e", Policy: policy, GPUs: nodes * gpusPerNode, TimeScale: timeScale,
				Namespace: fmt.Sprintf("e2e-replay-%s-%s", policy, suite.runID), Stuck: 2 * time.Minute,
				Components: func() string { return fmt.Sprint(suite.opts.ClusterPids()) }, Progress: ginkgo.GinkgoWriter,
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(run.Jobs).To(gomega.HaveLen(len(jobs)))
			for _, r := range run.Jobs {
				gomega.Expect(r.FirstStart).To(gomega.BeNumerically(">=", r.Submit-time.Minute), "job %s", r.ID)
				gomega.Expect(r.Finish).To(gomega.BeNumerically(">", r.FirstStart), "job %s", r.ID)
				gomega.Expect(r.Held).To(gomega.BeNumerically(">=", r.Service), "job %s held its GPUs less than its service time", r.ID)
			}

			ginkgo.By("comparing with the simulator on the same jobs")
			cfg := sim.DefaultConfig()
			cmp, err := sim.NewComparison(traces.Cluster{Pools: []traces.NodePool{{Count: nodes, GPUs: gpusPerNode, GPUModel: model}}},
				jobs, []string{policy}, policies.ByName, cfg)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			simRuns, err := cmp.Run(ctx)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			s, c := metrics.Summarize(simRuns[0]), metrics.Summarize(run)
			line := fmt.Sprintf("replay %s: mean JCT simulator %.0f s, cluster %.0f s (%+.1f%%); mean wait %.0f s vs %.0f s; makespan %.0f s vs %.0f s; replay wall %v",
				policy, s.JCT.Mean, c.JCT.Mean, (c.JCT.Mean-s.JCT.Mean)/s.JCT.Mean*100, s.Wait.Mean, c.Wait.Mean, s.Makespan, c.Makespan, run.Wall.Round(time.Second))
			ginkgo.AddReportEntry("replay "+policy, line)
			fmt.Fprintln(ginkgo.GinkgoWriter, line)
			// Not a fidelity measurement (docs/testbed.md has that): twelve jobs queueing on 24
			// GPUs at time scale 60 pay the cluster's start and finish latency (seconds of real
			// time, minutes of trace time) at every step of the queue, more so on a loaded
			// machine. The bounds catch a timeline read wrong (a unit or a scale error is off by
			// 60 times or more), not that latency.
			ratio := c.JCT.Mean / s.JCT.Mean
			gomega.Expect(ratio).To(gomega.And(gomega.BeNumerically(">", 0.5), gomega.BeNumerically("<", 3)), line)
		}, ginkgo.SpecTimeout(6*time.Minute))
	}

	// chaosReplay replays the jobs under pickyman while inject breaks the cluster beside it, and
	// checks what every chaos spec checks: every job finished, none ran twice at once, no node
	// was promised more GPUs than it has. before, when set, runs once the operator runs the
	// replay's configuration and before the first submission, in the replay's namespace
	// (created for it). inject gets the watcher and a count of the submissions the API server
	// refused (each retried until accepted).
	chaosReplay := func(ctx context.Context, name string, before func(ctx context.Context, ns string) error,
		inject func(ctx context.Context, w *util.GPUWatcher, refused *util.LineCounter) error) {
		conf := replay.OperatorConfig("pickyman", jobs, timeScale)
		suite.opts.PickyMan.Config = conf
		gomega.Expect(suite.opts.StopComponent(cluster.ComponentOperator, false)).To(gomega.Succeed())
		gomega.Expect(suite.opts.StartOperator(ctx, suite.clients)).To(gomega.Succeed())
		wctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		watcher, err := util.WatchGPUs(wctx, suite.clients.Kube, suite.watchClient)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		refused := util.NewLineCounter(ginkgo.GinkgoWriter, refusedLine, acceptedLine)
		ns := "e2e-" + name + "-" + suite.runID
		if before != nil {
			_, err := suite.clients.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(before(ctx, ns)).To(gomega.Succeed())
		}

		chaos := make(chan error, 1)
		go func() {
			defer ginkgo.GinkgoRecover()
			chaos <- inject(ctx, watcher, refused)
		}()
		run, err := replay.Run(ctx, replay.Clients{Client: suite.client, Kube: suite.clients.Kube}, replay.Options{
			Jobs: jobs, Name: "e2e-" + name, Policy: "pickyman", GPUs: nodes * gpusPerNode, TimeScale: timeScale,
			Namespace: ns, Stuck: 3 * time.Minute, Progress: refused,
			Components: func() string { return fmt.Sprint(suite.opts.ClusterPids()) },
		})
		gomega.Expect(<-chaos).To(gomega.Succeed())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(run.Jobs).To(gomega.HaveLen(len(jobs)), "every job finished")
		for i, j := range jobs {
			gomega.Expect(watcher.MaxLivePods(ns, replay.JobName(i))).To(gomega.BeNumerically("<=", int(j.Workers)),
				"job %s had more live pods at once than its %d workers", replay.JobName(i), j.Workers)
		}
		expectNoOverCommit(watcher)
	}
	// report records one measured line of a chaos spec (docs/reliability.md quotes them).
	report := func(name, format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		ginkgo.AddReportEntry(name, line)
		fmt.Fprintf(ginkgo.GinkgoWriter, "%s: %s\n", time.Now().Format(time.TimeOnly), line)
	}
	ginkgo.It("finishes every job, none running twice at once and no node over-committed, while the operator, the agent and the training-operator are killed at random moments", func(ctx context.Context) {
		seed := uint64(time.Now().UnixNano())
		rng := rand.New(rand.NewPCG(seed, 1))
		kills := []string{cluster.ComponentOperator, cluster.ComponentOperator, cluster.ComponentAgent, cluster.ComponentAgent,
			cluster.ComponentTrainingOperator}
		rng.Shuffle(len(kills), func(i, j int) { kills[i], kills[j] = kills[j], kills[i] })
		fmt.Fprintf(ginkgo.GinkgoWriter, "chaos seed %d: kills in order %v\n", seed, kills)
		chaosReplay(ctx, "chaos", nil, func(ctx context.Context, _ *util.GPUWatcher, _ *util.LineCounter) error {
			for _, c := range kills {
				if err := util.Sleep(ctx, time.Duration(3+rng.IntN(10))*time.Second); err != nil {
					return err
				}
				fmt.Fprintf(ginkgo.GinkgoWriter, "%s: SIGKILL %s\n", time.Now().Format(time.TimeOnly), c)
				if err := suite.opts.StopComponent(c, true); err != nil {
					return err
				}
				time.Sleep(time.Duration(1+rng.IntN(3)) * time.Second)
				var err error
				switch c {
				case cluster.ComponentOperator:
					err = suite.opts.StartOperator(ctx, suite.clients)
				case cluster.ComponentTrainingOperator:
					err = suite.opts.StartTrainingOperator(ctx)
				default:
					err = suite.opts.StartAgent(ctx)
				}
				if err != nil {
					return fmt.Errorf("restart %s: %w", c, err)
				}
			}
			return nil
		})
	}, ginkgo.SpecTimeout(8*time.Minute))

	ginkgo.It("finishes every job, none running twice at once and no node over-committed, while etcd and the API server are killed and restarted twice", func(ctx context.Context) {
		var outages []cluster.Outage
		var watcher *util.GPUWatcher
		chaosReplay(ctx, "apiserver", nil, func(ctx context.Context, w *util.GPUWatcher, _ *util.LineCounter) error {
			watcher = w
			// The first while jobs are still being submitted, the second 5 s after the first is
			// over, while the queue drains (the replay lasts about a minute).
			for _, at := range []time.Duration{8 * time.Second, 5 * time.Second} {
				if err := util.Sleep(ctx, at); err != nil {
					return err
				}
				fmt.Fprintf(ginkgo.GinkgoWriter, "%s: SIGKILL etcd and kube-apiserver\n", time.Now().Format(time.TimeOnly))
				out, err := suite.opts.RestartControlPlane(ctx, suite.clients, 2*time.Second, 10*time.Second)
				if err != nil {
					return err
				}
				outages = append(outages, out)
			}
			return nil
		})
		// Measured once the replay is over, so that a late first change is seen too.
		for i, out := range outages {
			gomega.Expect(watcher.PhaseChangeAfter(out.Ready)).NotTo(gomega.BeZero(),
				"no Allocation changed phase after restart %d: the replay was over, or the operator did not carry on", i+1)
			report(fmt.Sprintf("control plane restart %d", i+1), "etcd and the API server killed, down %v until ready; started again after exiting: %v; after the API server was ready, first Allocation phase change %v, first progress report %v",
				out.Down.Round(100*time.Millisecond), out.Revived, sinceOrNever(watcher.PhaseChangeAfter(out.Ready), out.Ready),
				sinceOrNever(watcher.ProgressAfter(out.Ready), out.Ready))
		}
	}, ginkgo.SpecTimeout(8*time.Minute))

	ginkgo.It("finishes every job, none running twice at once and no node over-committed, while the webhook is down during the submissions and the agent is cut off from the API server", func(ctx context.Context) {
		if !suite.opts.PickyMan.Installed {
			ginkgo.Skip("the partition cuts off the agent's pod on a real node: it needs the installed product (PICKYMAN_E2E_PROCESSES unset)")
		}
		var down time.Time
		// Every operator replica is killed (the webhook goes with them) before the first of the
		// jobs, which arrive one a second for 12 s, and the outage is known to have begun
		// before they do: a dry-run submission is refused. A killed replica's pod is gone from
		// the API at once, but its process on the node and its address in the webhook
		// Service's endpoints may outlive it by seconds on a loaded machine, answering
		// submissions meanwhile; a kill racing the submissions could miss them all.
		outage := func(ctx context.Context, ns string) error {
			down = time.Now()
			if err := suite.opts.StopComponent(cluster.ComponentOperator, true); err != nil {
				return err
			}
			probe, err := replay.Build(replay.KindPyTorchJob, jobs[0], "webhook-probe", ns, "e2e-partition")
			if err != nil {
				return err
			}
			var last error
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				last = suite.client.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
				return last != nil, nil
			}); err != nil {
				return fmt.Errorf("a dry-run submission was still accepted a minute after every operator replica's deletion: the webhook did not go down")
			}
			if !replay.Transient(last) {
				return fmt.Errorf("the dry-run submission was refused for another reason than the webhook's absence: %w", last)
			}
			fmt.Fprintf(ginkgo.GinkgoWriter, "%s: webhook down %v after the kill began: %v\n", time.Now().Format(time.TimeOnly), time.Since(down).Round(100*time.Millisecond), last)
			return nil
		}
		chaosReplay(ctx, "partition", outage, func(ctx context.Context, w *util.GPUWatcher, refused *util.LineCounter) error {
			// Kept down for 8 s, and until the API server has refused a submission; the
			// submitter retries the refused job and holds the later ones behind it.
			if err := util.Sleep(ctx, 8*time.Second); err != nil {
				return err
			}
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return len(refused.Lines(refusedLine)) > 0, nil
			}); err != nil {
				return fmt.Errorf("no submission was refused within a minute while the webhook was down")
			}
			restart := time.Now()
			if err := suite.opts.StartOperator(ctx, suite.clients); err != nil {
				return err
			}
			back := time.Now()
			// The submitter retries one job until it is accepted, the others waiting behind it.
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return len(refused.Lines(acceptedLine)) >= len(refused.Lines(refusedLine)), nil
			}); err != nil {
				return fmt.Errorf("refused submissions not accepted within a minute of the webhook's return: %v", refused.Lines(refusedLine))
			}
			report("webhook down", "every operator replica (webhook and scheduler) killed and down %v, ready again %v after the restart began; %d submissions refused and retried: %v",
				back.Sub(down).Round(100*time.Millisecond), back.Sub(restart).Round(100*time.Millisecond), len(refused.Lines(refusedLine)), refused.Lines(acceptedLine))

			if err := util.Sleep(ctx, 10*time.Second); err != nil {
				return err
			}
			pods, err := cluster.RunningPods(ctx, suite.clients, cluster.ComponentAgent)
			if err != nil {
				return err
			}
			if len(pods) != 1 {
				return fmt.Errorf("%d running agent pods, want 1", len(pods))
			}
			fmt.Fprintf(ginkgo.GinkgoWriter, "%s: partition %s (%s) from the API server\n", time.Now().Format(time.TimeOnly), pods[0].Name, pods[0].Status.PodIP)
			heal, err := suite.opts.Partition(pods[0].Status.PodIP)
			if err != nil {
				return err
			}
			cut := time.Now()
			waitErr := util.Sleep(ctx, 20*time.Second)
			// No progress report can reach the API server through the partition.
			during := w.ProgressAfter(cut.Add(2 * time.Second))
			healErr := heal()
			healed := time.Now()
			if err := errors.Join(waitErr, healErr); err != nil {
				return err
			}
			if !during.IsZero() && during.Before(healed) {
				return fmt.Errorf("a progress report arrived %v into the partition: the agent was not cut off", during.Sub(cut))
			}
			var first time.Time
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				first = w.ProgressAfter(healed)
				return !first.IsZero(), nil
			}); err != nil {
				return fmt.Errorf("no progress report within a minute of the partition's end: %w", err)
			}
			report("agent partitioned", "testbed agent pod cut off from the API server for %v; its first progress report %v after the partition ended",
				healed.Sub(cut).Round(100*time.Millisecond), first.Sub(healed).Round(100*time.Millisecond))
			return nil
		})
	}, ginkgo.SpecTimeout(8*time.Minute))
})

// The replay's progress lines about a refused submission and its acceptance after retries.
const (
	refusedLine  = "refused ("
	acceptedLine = "accepted at attempt"
)

// sinceOrNever is the time from t0 to t, or "never" when t is zero.
func sinceOrNever(t, t0 time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(t0).Round(100 * time.Millisecond).String()
}
