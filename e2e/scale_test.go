//go:build e2e && scale

package e2e

// The scale spec measures rather than tests: make scale-cluster builds it (tag scale) and
// runs it alone; the e2e suites of make test do not contain it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// The operator and the testbed agent at scale: 1,000 fake nodes of 8 GPUs and 5,000 one-GPU
// jobs (PICKYMAN_SCALE_NODES and PICKYMAN_SCALE_JOBS change the sizes). It measures how
// fast the operator admits the jobs and what every component uses in CPU and memory, idle on
// the nodes, while admitting, and with every job running, when each job reached each stage
// (submitted, queued, admitted, its pod created and ready) and which API requests the run
// cost; the figures go to the report and to out/scale.txt. PICKYMAN_SCALE_UNTIL=admitted ends
// it once every job is admitted, without waiting for the pods. Run it alone (make scale-cluster): it is not part of make test.
var _ = ginkgo.Describe("Scale", ginkgo.Ordered, ginkgo.Label("scale"), func() {
	ginkgo.It("admits every job on the fake nodes and reports admissions per second and the components' CPU and memory", func(ctx context.Context) {
		requirePickyMan()
		nodes, jobs := envInt("PICKYMAN_SCALE_NODES", 1000), envInt("PICKYMAN_SCALE_JOBS", 5000)
		ns := "e2e-scale-" + suite.runID
		var report strings.Builder
		say := func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			report.WriteString(line + "\n")
			fmt.Fprintln(ginkgo.GinkgoWriter, line)
		}
		sample := func(phase string, d time.Duration) {
			us, err := cluster.SampleUsage(ctx, suite.opts.ClusterPids(), d, time.Second)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			say("## %s (sampled over %v)", phase, d)
			var b strings.Builder
			cluster.PrintUsage(&b, us)
			report.WriteString(b.String())
			fmt.Fprint(ginkgo.GinkgoWriter, b.String())
		}

		ginkgo.By(fmt.Sprintf("creating %d fake nodes of 8 GPUs", nodes))
		built := cluster.BuildNodes([]cluster.Pool{{Name: "scale-" + suite.runID, Nodes: nodes, GPUsPerNode: 8, Model: "A10"}})
		names := make([]string, len(built))
		for i, n := range built {
			names[i] = n.Name
		}
		_, err := suite.clients.EnsureNodes(ctx, built)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(suite.clients.WaitNodesReady(ctx, names, 5*time.Minute)).To(gomega.Succeed())
		gomega.Expect(suite.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
		say("# scale: %d nodes x 8 GPUs, %d one-GPU jobs, agent time scale %d", nodes, jobs, timeScale)
		conf := suite.opts.PickyMan.Config
		say("# operator: jobConcurrency %d, writeConcurrency %d, clientConnection qps %g burst %d", conf.JobConcurrency, conf.WriteConcurrency, conf.ClientConnection.QPS, conf.ClientConnection.Burst)
		sample(fmt.Sprintf("%d nodes, no jobs", nodes), 30*time.Second)

		requestsBefore := apiServerRequests(ctx)
		ginkgo.By(fmt.Sprintf("submitting %d one-GPU PyTorchJobs, 16 at a time", jobs))
		training := util.Training{Epochs: 1000, EpochTime: time.Hour, DatasetBytes: 10e9, CheckpointBytes: 1e9}
		product := cluster.LookupGPUModel("A10").Product
		start := time.Now()
		work := make(chan int)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var createErr error
		for range 16 {
			wg.Go(func() {
				for i := range work {
					j := util.MakePyTorchJob(fmt.Sprintf("scale-%05d", i), ns).Master(1).
						NodeSelector(map[string]string{cluster.LabelGPUProduct: product}).PickyMan("default", "resnet50", training).Obj()
					if err := suite.client.Create(ctx, j); err != nil {
						mu.Lock()
						createErr = err
						mu.Unlock()
					}
				}
			})
		}
		sampled := make(chan struct{})
		go func() {
			defer ginkgo.GinkgoRecover()
			defer close(sampled)
			sample("submitting and admitting", time.Minute)
		}()
		for i := range jobs {
			work <- i
		}
		close(work)
		wg.Wait()
		gomega.Expect(createErr).NotTo(gomega.HaveOccurred())
		submitted := time.Since(start)
		say("submitted %d jobs in %v (%.1f/s through the webhooks)", jobs, submitted.Round(time.Millisecond), float64(jobs)/submitted.Seconds())

		ginkgo.By("waiting until every job is admitted")
		var admittedAt time.Duration
		gomega.Eventually(func(g gomega.Gomega) {
			var list pickymanv1.AllocationList
			g.Expect(suite.client.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
			n := 0
			for _, a := range list.Items {
				if a.Status.Phase == pickymanv1.AllocationAdmitted {
					n++
				}
			}
			g.Expect(n).To(gomega.Equal(jobs))
			admittedAt = time.Since(start)
		}, 20*time.Minute, 2*time.Second).Should(gomega.Succeed())
		say("all %d admitted %v after the first submission: %.1f admissions/s", jobs, admittedAt.Round(time.Second), float64(jobs)/admittedAt.Seconds())
		<-sampled
		cycles := cycleHistogram(ctx)
		say("admissions/s: %.1f", float64(jobs)/admittedAt.Seconds())
		say("cycle p99 ms: %.0f", 1000*cycles.Quantile(0.99))
		say("cycles: %d, mean %.0f ms, p50 %.0f ms", cycles.Count, 1000*cycles.Sum/float64(max(cycles.Count, 1)), 1000*cycles.Quantile(0.5))
		say("%s", batchFigures(ctx))
		say("%s", cycleStages(ctx))
		// Which stage limits the rate end to end: when each job reached each stage, and
		// what the API server served meanwhile.
		say("## API server requests from the first submission to the last admission")
		util.WriteRequests(&report, requestsBefore, apiServerRequests(ctx), jobs, 16)
		say("## stages (seconds after the first submission, from the objects' timestamps)")
		util.WriteStages(&report, start.Truncate(time.Second), time.Minute, jobStages(ctx, ns, false))
		// The admission figures are kept even if a later phase fails.
		writeReport(report.String())
		if os.Getenv("PICKYMAN_SCALE_UNTIL") == "admitted" {
			ginkgo.By("stopping after the admissions (PICKYMAN_SCALE_UNTIL=admitted)")
			return
		}

		ginkgo.By("every job's pod runs")
		gomega.Eventually(func(g gomega.Gomega) {
			var pods corev1.PodList
			g.Expect(suite.client.List(ctx, &pods, client.InNamespace(ns))).To(gomega.Succeed())
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			g.Expect(running).To(gomega.Equal(jobs))
		}, 40*time.Minute, 5*time.Second).Should(gomega.Succeed()) // the training-operator creates 2 to 4 pods/s here
		say("## stages to every pod running (seconds after the first submission)")
		util.WriteStages(&report, start.Truncate(time.Second), time.Minute, jobStages(ctx, ns, true))
		sample(fmt.Sprintf("%d jobs running on %d nodes", jobs, nodes), 30*time.Second)

		writeReport(report.String())
		ginkgo.AddReportEntry("scale", report.String())
	}, ginkgo.SpecTimeout(85*time.Minute))
})

// jobStages reads when each job of namespace ns was submitted (the PyTorchJob created), queued
// (its Allocation created by the job controller), admitted and, with pods, when its pod was created and became
// ready. The API server keeps these times to the second.
func jobStages(ctx context.Context, ns string, pods bool) []util.Stage {
	var jobs kftraining.PyTorchJobList
	gomega.Expect(suite.client.List(ctx, &jobs, client.InNamespace(ns))).To(gomega.Succeed())
	var allocs pickymanv1.AllocationList
	gomega.Expect(suite.client.List(ctx, &allocs, client.InNamespace(ns))).To(gomega.Succeed())
	index := make(map[string]int, len(jobs.Items))
	stages := []util.Stage{{Name: "submitted"}, {Name: "allocation created"}, {Name: "admitted"}}
	if pods {
		stages = append(stages, util.Stage{Name: "pod created"}, util.Stage{Name: "pod ready"})
	}
	for i := range stages {
		stages[i].Times = make([]time.Time, len(jobs.Items))
	}
	for i, j := range jobs.Items {
		index[j.Name] = i
		stages[0].Times[i] = j.CreationTimestamp.Time
	}
	byAlloc := map[string]int{}
	for _, a := range allocs.Items {
		i, ok := index[a.Spec.Job.Name]
		if !ok {
			continue
		}
		byAlloc[a.Name] = i
		stages[1].Times[i] = a.CreationTimestamp.Time
		if c := apimeta.FindStatusCondition(a.Status.Conditions, pickymanv1.ConditionAdmitted); c != nil && c.Status == metav1.ConditionTrue {
			stages[2].Times[i] = c.LastTransitionTime.Time
		}
	}
	if pods {
		var list corev1.PodList
		gomega.Expect(suite.client.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
		for _, p := range list.Items {
			i, ok := byAlloc[p.Labels[pickymanv1.LabelAllocation]]
			if !ok {
				continue
			}
			stages[3].Times[i] = p.CreationTimestamp.Time
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					stages[4].Times[i] = c.LastTransitionTime.Time
				}
			}
		}
	}
	return stages
}

// apiServerRequests reads the API server's request counts and latencies by verb and resource.
func apiServerRequests(ctx context.Context) util.Requests {
	raw, err := suite.clients.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading the API server's metrics")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "parsing the API server's metrics")
	return util.ReadRequests(fams)
}

// writeReport writes the figures so far to out/scale.txt.
func writeReport(text string) {
	root, err := cluster.RepoRoot("")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	out := filepath.Join(root, "out", "scale.txt")
	gomega.Expect(os.MkdirAll(filepath.Dir(out), 0o755)).To(gomega.Succeed())
	gomega.Expect(os.WriteFile(out, []byte(text), 0o644)).To(gomega.Succeed())
}

// cycleHistogram sums the scheduling-cycle histogram of every operator replica.
func cycleHistogram(ctx context.Context) *util.Histogram {
	urls, err := suite.opts.OperatorMetricsURLs(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	h := &util.Histogram{}
	for _, u := range urls {
		fams, err := scrape(u)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "scraping %s", u)
		h.Add(fams["pickyman_scheduling_cycle_seconds"])
	}
	gomega.Expect(h.Count).To(gomega.BeNumerically(">", 0), "no scheduling cycle in the operators' metrics")
	return h
}

// batchFigures sums, over every operator replica, the scheduler's batches of writes after
// its cycles: the fence swaps, those that failed and sent their cycle back to decide again,
// and how long a batch's writes took.
func batchFigures(ctx context.Context) string {
	urls, err := suite.opts.OperatorMetricsURLs(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var fenced float64
	swaps, writes := &util.Histogram{}, &util.Histogram{}
	for _, u := range urls {
		fams, err := scrape(u)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "scraping %s", u)
		for _, m := range fams["pickyman_fenced_cycles_total"].GetMetric() {
			fenced += m.GetCounter().GetValue()
		}
		swaps.Add(stageFamily(fams["pickyman_scheduling_cycle_stage_seconds"], "fence_swap"))
		writes.Add(stageFamily(fams["pickyman_scheduling_cycle_stage_seconds"], "writes"))
	}
	return fmt.Sprintf("fence swaps: %d, %.0f failed (their cycles decided again), mean %.0f ms; batches written: %d, mean %.1f s from the cycle to the last write",
		swaps.Count, fenced, 1000*swaps.Sum/float64(max(swaps.Count, 1)), writes.Count, writes.Sum/float64(max(writes.Count, 1)))
}

// cycleStages sums, over every operator replica, the stages of the scheduling cycles
// (pickyman_scheduling_cycle_stage_seconds, those inside a cycle) and gives each one's p99
// and mean: which stage the cycle's p99 is made of.
func cycleStages(ctx context.Context) string {
	urls, err := suite.opts.OperatorMetricsURLs(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	stages := []string{"fence_read", "snapshot", "decide", "act"}
	hs := make([]*util.Histogram, len(stages))
	for i := range hs {
		hs[i] = &util.Histogram{}
	}
	for _, u := range urls {
		fams, err := scrape(u)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "scraping %s", u)
		for i, st := range stages {
			hs[i].Add(stageFamily(fams["pickyman_scheduling_cycle_stage_seconds"], st))
		}
	}
	var b strings.Builder
	b.WriteString("cycle stages p99 / mean ms:")
	for i, st := range stages {
		if hs[i].Count == 0 {
			continue
		}
		fmt.Fprintf(&b, " %s %.0f / %.1f", st, 1000*hs[i].Quantile(0.99), 1000*hs[i].Sum/float64(hs[i].Count))
	}
	return b.String()
}

// stageFamily is the family's series of one stage.
func stageFamily(fam *dto.MetricFamily, stage string) *dto.MetricFamily {
	if fam == nil {
		return nil
	}
	out := &dto.MetricFamily{Name: fam.Name, Type: fam.Type}
	for _, m := range fam.GetMetric() {
		if label(m, "stage") == stage {
			out.Metric = append(out.Metric, m)
		}
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
