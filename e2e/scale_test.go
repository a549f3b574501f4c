//go:build e2e && scale

package e2e

// The scale spec measures rather than tests: make scale-cluster builds it (tag scale) and
// runs it alone; the e2e suites of make test do not contain it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// The operator and the testbed agent at scale: 1,000 fake nodes of 8 GPUs and 5,000 one-GPU
// jobs (PICKYMAN_SCALE_NODES and PICKYMAN_SCALE_JOBS change the sizes). It measures how
// fast the operator admits the jobs and what every component uses in CPU and memory, idle on
// the nodes, while admitting, and with every job running; the figures go to the report and
// to out/scale.txt. Run it alone (make scale-cluster): it is not part of make test.
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
		sample(fmt.Sprintf("%d nodes, no jobs", nodes), 30*time.Second)

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
		// The admission figures are kept even if a later phase fails.
		writeReport(report.String())

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
		sample(fmt.Sprintf("%d jobs running on %d nodes", jobs, nodes), 30*time.Second)

		writeReport(report.String())
		ginkgo.AddReportEntry("scale", report.String())
	}, ginkgo.SpecTimeout(85*time.Minute))
})

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

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
