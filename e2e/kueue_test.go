//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/replay"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// A short contended trace replayed under real Kueue (v0.17.0, started for this container and
// stopped after it): Kueue admits the PyTorchJobs from one ClusterQueue of the two nodes'
// GPUs, preempts lower priorities within it, and PickyMan's operator leaves the jobs alone.
// The spec checks that the replay reads the timelines right (every job admitted after its
// arrival, finished after its start, its preemptions those that Kueue counted on the
// Workload, never more GPUs held than the ClusterQueue has), not who wins.
var _ = ginkgo.Describe("Trace replay under real Kueue", ginkgo.Ordered, ginkgo.Label("cluster", "kueue"), func() {
	const (
		model       = "B200" // no other spec uses this GPU model
		nodes       = 2
		gpusPerNode = 8
	)
	var jobs []traces.Job

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		ginkgo.By("starting Kueue's controller manager with its CRDs and webhooks")
		gomega.Expect(suite.opts.StartKueue(ctx, suite.clients)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx context.Context) {
			ginkgo.By("stopping Kueue and removing its webhooks")
			gomega.Expect(suite.opts.StopKueue(ctx, suite.clients)).To(gomega.Succeed())
		})
		built := cluster.BuildNodes([]cluster.Pool{{Name: "e2e-kueue-" + suite.runID, Nodes: nodes, GPUsPerNode: gpusPerNode, Model: model}})
		var names []string
		for _, n := range built {
			names = append(names, n.Name)
		}
		_, err := suite.clients.EnsureNodes(ctx, built)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(suite.clients.WaitNodesReady(ctx, names, suite.opts.Timeout)).To(gomega.Succeed())
		// Eight jobs on 16 GPUs, a trace minute apart: two low-priority jobs fill the GPUs,
		// a high-priority one arrives and preempts the one admitted last, the rest queue.
		shapes := []struct {
			workers, per, epochs, priority int32
		}{{1, 8, 5, 0}, {1, 8, 5, 0}, {1, 8, 2, 1}, {1, 4, 3, 0}, {2, 4, 3, 1}, {1, 4, 2, 0}, {1, 8, 3, 0}, {1, 4, 2, 1}}
		for i, s := range shapes {
			jobs = append(jobs, traces.Job{ID: fmt.Sprintf("kueue-%d", i), Submit: time.Duration(i) * time.Minute,
				Workers: s.workers, GPUsPerWorker: s.per, GPUs: s.workers * s.per, GPUModel: model, Model: "resnet50",
				Priority: s.priority, Epochs: s.epochs, EpochTime: 2 * time.Minute, Duration: time.Duration(s.epochs) * 2 * time.Minute,
				DatasetBytes: 10e9, CheckpointBytes: 1e9})
		}
	})

	ginkgo.It("replays the trace and reads every job's timeline from Kueue's Workloads", func(ctx context.Context) {
		ns := "e2e-kueue-" + suite.runID
		size := traces.Cluster{Pools: []traces.NodePool{{Count: nodes, GPUs: gpusPerNode, GPUModel: model}}}
		ginkgo.By("replaying with Kueue admitting the jobs")
		run, err := replay.Run(ctx, replay.Clients{Client: suite.client, Kube: suite.clients.Kube, Dynamic: suite.clients.Dynamic}, replay.Options{
			Jobs: jobs, Name: "e2e-kueue", Policy: "Kueue", GPUs: nodes * gpusPerNode, TimeScale: timeScale,
			Namespace: ns, Stuck: 2 * time.Minute, Progress: ginkgo.GinkgoWriter,
			Components:   func() string { return fmt.Sprint(suite.opts.ClusterPids()) },
			Scheduler:    replay.SchedulerKueue,
			KueueFlavors: replay.KueueFlavors(size, model),
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(run.Jobs).To(gomega.HaveLen(len(jobs)))

		ginkgo.By("checking every timeline")
		byID := map[string]metrics.JobRecord{}
		for _, r := range run.Jobs {
			byID[r.ID] = r
			gomega.Expect(r.FirstStart).To(gomega.BeNumerically(">=", r.Submit-time.Minute), "job %s", r.ID)
			gomega.Expect(r.Finish).To(gomega.BeNumerically(">", r.FirstStart), "job %s", r.ID)
			gomega.Expect(r.Held).To(gomega.BeNumerically(">=", r.Service), "job %s held its GPUs less than its service time", r.ID)
		}
		for _, p := range run.Series {
			gomega.Expect(p.Utilization).To(gomega.BeNumerically("<=", 1+1e-9), "more GPUs held at %v than the ClusterQueue has", p.T)
		}

		ginkgo.By("comparing the preemptions with Kueue's own count on each Workload")
		wls, err := suite.clients.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}).
			Namespace(ns).List(ctx, metav1.ListOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(wls.Items).To(gomega.HaveLen(len(jobs)))
		var total int32
		for i := range wls.Items {
			w := &wls.Items[i]
			s := replay.ReadWorkload(w)
			gomega.Expect(s.Finished).To(gomega.BeTrue(), "Workload %s", w.GetName())
			counted := kueueEvictions(w)
			idx := -1
			for k := range jobs {
				if replay.JobName(k) == s.Job {
					idx = k
				}
			}
			gomega.Expect(idx).To(gomega.BeNumerically(">=", 0), "Workload %s of an unknown job %q", w.GetName(), s.Job)
			gomega.Expect(byID[jobs[idx].ID].Preemptions).To(gomega.Equal(counted), "job %s: preemptions read from the watch vs Kueue's count", s.Job)
			total += counted
		}
		gomega.Expect(total).To(gomega.BeNumerically(">", 0), "the high-priority jobs preempted nothing: the trace is not contended")

		ginkgo.By("comparing with the simulator's kueue policy on the same jobs")
		cmp, err := sim.NewComparison(size, jobs, []string{"kueue"}, policies.ByName, sim.DefaultConfig())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		simRuns, err := cmp.Run(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		s, c := metrics.Summarize(simRuns[0]), metrics.Summarize(run)
		line := fmt.Sprintf("replay under Kueue: mean JCT simulator kueue %.0f s, cluster %.0f s; mean wait %.0f s vs %.0f s; preemptions %d vs %d; replay wall %v",
			s.JCT.Mean, c.JCT.Mean, s.Wait.Mean, c.Wait.Mean, s.Preemptions, c.Preemptions, run.Wall.Round(time.Second))
		ginkgo.AddReportEntry("replay kueue", line)
		fmt.Fprintln(ginkgo.GinkgoWriter, line)
		// A timeline read wrong (a unit or a scale error) is off by 60 times or more; the
		// cluster's start and stop latency at time scale 60 is not.
		gomega.Expect(c.JCT.Mean/s.JCT.Mean).To(gomega.And(gomega.BeNumerically(">", 0.5), gomega.BeNumerically("<", 3)), line)
	}, ginkgo.SpecTimeout(3*time.Minute))
})

// kueueEvictions is the number of times Kueue evicted the Workload, from its scheduling
// statistics.
func kueueEvictions(w *unstructured.Unstructured) int32 {
	evs, _, _ := unstructured.NestedSlice(w.Object, "status", "schedulingStats", "evictions")
	var n int64
	for _, e := range evs {
		if m, ok := e.(map[string]any); ok {
			c, _, _ := unstructured.NestedInt64(m, "count")
			n += c
		}
	}
	return int32(n)
}
