//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// The preemption scenario with PyTorchJobs and RayJobs mixed: both kinds go through the same
// job adapter, so PickyMan chooses its victims among them by the same cost, checkpoints them
// at their epoch boundary through the same handshake before their pods go (KubeRay deletes a
// suspended RayJob's RayCluster), and resumes them from the checkpointed epoch. KubeRay's own
// controllers run the RayJobs (tools/kuberay); only the Ray dashboard is the testbed's.
var _ = ginkgo.Describe("PickyMan preemption across PyTorchJobs and RayJobs", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "rayjob"), func() {
	const (
		gpusPerNode = 8
		model       = "P100" // no other spec uses this GPU model
	)
	var (
		ns  string
		env *specEnv
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		if !suite.opts.KubeRay {
			ginkgo.Skip("needs KubeRay's controllers in the local testbed cluster")
		}
		ns = "e2e-ray-" + suite.runID
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-p100-" + suite.runID, Nodes: 2, GPUsPerNode: gpusPerNode, Model: model}, nil, true)
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("suspends the cheapest victims of either kind at their epoch boundary for a high-priority job, resumes them from the checkpointed epoch, and finishes every job", func(ctx context.Context) {
		selector := map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}
		long := util.Training{Epochs: 30, EpochTime: 2 * time.Minute, DatasetBytes: 50e9}
		// Submitted in this order, each of 4 GPUs: best fit pairs the first two on one node,
		// the last two on the other, so the cheaper node holds a RayJob and a PyTorchJob.
		specs := []struct {
			name string
			ckpt int64
		}{{"ray-small", 1e9}, {"pt-small", 2e9}, {"ray-big", 200e9}, {"pt-big", 400e9}}
		var jobs []string
		size := map[string]int64{}
		for _, s := range specs {
			t := long
			t.CheckpointBytes = s.ckpt
			size[s.name] = s.ckpt
			jobs = append(jobs, s.name)
			var obj client.Object
			if strings.HasPrefix(s.name, "ray-") {
				obj = util.MakeRayJob(s.name, ns).Workers(1, 4).NodeSelector(selector).PickyMan("low", "resnet50", t).Obj()
			} else {
				obj = util.MakePyTorchJob(s.name, ns).Master(4).NodeSelector(selector).PickyMan("low", "resnet50", t).Obj()
			}
			gomega.Expect(suite.client.Create(ctx, obj)).To(gomega.Succeed())
			// One at a time, so that best fit decides the pairs.
			expectAllocationPhase(ctx, ns, s.name, pickymanv1.AllocationAdmitted, util.Timeout)
		}
		ginkgo.By("the four low-priority jobs train, two per node")
		nodeOf := map[string]string{}
		byNode := map[string][]string{}
		cost := map[string]int64{}
		for _, j := range jobs {
			a := expectAllocationPhase(ctx, ns, j, pickymanv1.AllocationAdmitted, util.Timeout)
			gomega.Expect(a.Status.Placement).To(gomega.HaveLen(1))
			nodeOf[j] = a.Status.Placement[0].Node
			byNode[nodeOf[j]] = append(byNode[nodeOf[j]], j)
			cost[nodeOf[j]] += size[j]
			expectProgress(ctx, ns, j, 1)
		}
		gomega.Expect(byNode).To(gomega.HaveLen(2), "placements %v", nodeOf)
		best := ""
		for n := range byNode {
			if best == "" || cost[n] < cost[best] {
				best = n
			}
		}
		cheapest := byNode[best]
		sort.Strings(cheapest)

		ginkgo.By("submitting a short high-priority PyTorchJob that needs a whole node")
		urgent := util.MakePyTorchJob("urgent", ns).Master(gpusPerNode).NodeSelector(selector).
			PickyMan("high", "bert", util.Training{Epochs: 3, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9, Estimate: 5 * time.Second}).Obj()
		gomega.Expect(suite.client.Create(ctx, urgent)).To(gomega.Succeed())
		expectAllocationPhase(ctx, ns, "urgent", pickymanv1.AllocationAdmitted, 2*util.Timeout)

		ginkgo.By(fmt.Sprintf("exactly the jobs of the cheaper node were preempted: %v", cheapest))
		victims := preempted(ctx, ns, jobs)
		gomega.Expect(victims).To(gomega.Equal(cheapest))
		for _, v := range victims {
			checkBoundaryCheckpoint(ctx, ns, v, env.watcher, size[v])
		}
		for _, v := range victims {
			reportLatency(ns, v, env.watcher)
		}

		ginkgo.By("every job finishes; the victims resume from their checkpointed epoch and lose none")
		for _, j := range append(jobs, "urgent") {
			expectSucceeded(ctx, ns, j, 5*time.Minute)
		}
		for _, v := range victims {
			checkResumed(ctx, ns, v, env.watcher, long.Epochs)
		}
		expectNoOverCommit(env.watcher)
	}, ginkgo.SpecTimeout(10*time.Minute))
})

// expectSucceeded waits until a job of either kind has succeeded: a PyTorchJob's Succeeded
// condition, a RayJob's Complete deployment with the Ray job SUCCEEDED; and its Allocation
// Finished.
func expectSucceeded(ctx context.Context, ns, job string, timeout time.Duration) {
	if allocName(job) == "rayjob-"+job {
		gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
			rj := &rayv1.RayJob{}
			g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, rj)).To(gomega.Succeed())
			g.Expect(rj.Status.JobDeploymentStatus).To(gomega.Equal(rayv1.JobDeploymentStatusComplete), "RayJob %s: %s %s", job, rj.Status.JobStatus, rj.Status.Message)
			g.Expect(rj.Status.JobStatus).To(gomega.Equal(rayv1.JobStatusSucceeded))
		}, timeout, util.Interval).Should(gomega.Succeed())
	} else {
		util.ExpectJobConditionWithin(ctx, suite.client, ns, job, kftraining.JobSucceeded, timeout)
	}
	expectAllocationPhase(ctx, ns, job, pickymanv1.AllocationFinished, util.Timeout)
}
