//go:build e2e

package e2e

import (
	"context"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// A TrainJob end to end on the real Kubeflow Trainer and JobSet (tools/trainer, tools/jobset):
// PickyMan admits it as a gang whose size and GPUs come from its TrainingRuntime, preempts it
// for a high-priority job through the checkpoint handshake (the Trainer suspends the JobSet,
// whose Jobs delete the pods), resumes it from the acknowledged epoch, and the Trainer
// completes it once the testbed agent has trained every node.
var _ = ginkgo.Describe("PickyMan with a TrainJob on the Kubeflow Trainer", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "trainjob"), func() {
	const (
		gpusPerNode = 8
		model       = "H200" // no other spec uses this GPU model
	)
	var (
		ns  string
		env *specEnv
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		if !suite.opts.Trainer {
			ginkgo.Skip("needs the Trainer's and JobSet's controllers in the local testbed cluster")
		}
		ns = "e2e-tj-" + suite.runID
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-h200-" + suite.runID, Nodes: 1, GPUsPerNode: gpusPerNode, Model: model}, nil, true)
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("admits the TrainJob as a gang of its runtime's size, preempts it at its epoch boundary, resumes it from the checkpointed epoch and finishes it", func(ctx context.Context) {
		selector := map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}
		long := util.Training{Epochs: 20, EpochTime: 2 * time.Minute, DatasetBytes: 50e9, CheckpointBytes: 2e9}
		tj := util.MakeTrainJob("tj-long", ns).RuntimeNodes(2, gpusPerNode/2).NodeSelector(selector).PickyMan("low", "resnet50", long)
		gomega.Expect(suite.client.Create(ctx, tj.Runtime())).To(gomega.Succeed())
		gomega.Expect(suite.client.Create(ctx, tj.Obj())).To(gomega.Succeed())

		ginkgo.By("PickyMan admits the TrainJob as one gang of two nodes of 4 GPUs, read from its runtime")
		a := expectAllocationPhase(ctx, ns, "tj-long", pickymanv1.AllocationAdmitted, util.Timeout)
		gomega.Expect(a.Spec.PodSets).To(gomega.Equal([]pickymanv1.PodSet{{Name: trainjob.TrainJobNodePodSet, Count: 2, GPUsPerPod: gpusPerNode / 2, GPUModel: cluster.LookupGPUModel(model).Product}}))
		pods := int32(0)
		for _, n := range a.Status.Placement {
			pods += n.Pods
		}
		gomega.Expect(pods).To(gomega.Equal(int32(2)), "placement %v", a.Status.Placement)
		expectProgress(ctx, ns, "tj-long", 1)
		nodePods, err := gpuPods(ctx, ns, "tj-long")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(nodePods).To(gomega.HaveLen(2))
		for _, p := range nodePods {
			gomega.Expect(p.Spec.SchedulerName).To(gomega.Equal("pickyman"), "pod %s", p.Name)
			gomega.Expect(p.Labels).To(gomega.HaveKeyWithValue(trainjob.JobSetNameLabel, "tj-long"))
		}

		ginkgo.By("a short high-priority job that needs the whole node preempts it")
		urgent := util.MakePyTorchJob("urgent", ns).Master(gpusPerNode).NodeSelector(selector).
			PickyMan("high", "bert", util.Training{Epochs: 3, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9, Estimate: 5 * time.Second}).Obj()
		gomega.Expect(suite.client.Create(ctx, urgent)).To(gomega.Succeed())
		expectAllocationPhase(ctx, ns, "urgent", pickymanv1.AllocationAdmitted, 2*util.Timeout)
		gomega.Expect(preempted(ctx, ns, []string{"tj-long"})).To(gomega.Equal([]string{"tj-long"}))
		checkBoundaryCheckpoint(ctx, ns, "tj-long", env.watcher, long.CheckpointBytes)
		reportLatency(ns, "tj-long", env.watcher)

		ginkgo.By("both finish; the TrainJob resumes from its checkpointed epoch and the Trainer completes it")
		expectSucceeded(ctx, ns, "urgent", 3*time.Minute)
		expectTrainJobComplete(ctx, ns, "tj-long", 3*time.Minute)
		checkResumed(ctx, ns, "tj-long", env.watcher, long.Epochs)
		expectNoOverCommit(env.watcher)
	}, ginkgo.SpecTimeout(5*time.Minute))
})

// expectTrainJobComplete waits until the Trainer has set the TrainJob's Complete condition and
// PickyMan has finished its Allocation.
func expectTrainJobComplete(ctx context.Context, ns, job string, timeout time.Duration) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(trainjob.GVK)
		g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, u)).To(gomega.Succeed())
		g.Expect(util.TrainJobCondition(u, "Complete")).To(gomega.Equal(string(corev1.ConditionTrue)), "TrainJob %s/%s status %v", ns, job, u.Object["status"])
	}, timeout, util.Interval).Should(gomega.Succeed())
	expectAllocationPhase(ctx, ns, job, pickymanv1.AllocationFinished, util.Timeout)
}
