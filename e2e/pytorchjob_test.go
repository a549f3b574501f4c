//go:build e2e

package e2e

import (
	"context"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

var _ = ginkgo.Describe("PyTorchJob on fake GPU nodes", ginkgo.Ordered, ginkgo.Label("cluster", "pytorchjob"), func() {
	const gpusPerNode = 8
	var (
		ns        string
		nodeNames []string
		selector  map[string]string
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		ns = "e2e-" + suite.runID
		selector = map[string]string{"pickyman.dev/e2e-run": suite.runID}

		ginkgo.By("creating four fake nodes of 8 GPUs for this run")
		nodes := cluster.BuildNodes([]cluster.Pool{{
			Name: "e2e-" + suite.runID, Nodes: 4, GPUsPerNode: gpusPerNode, Model: "A100", Labels: selector,
		}})
		for _, n := range nodes {
			nodeNames = append(nodeNames, n.Name)
		}
		_, err := suite.clients.EnsureNodes(ctx, nodes)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(suite.clients.WaitNodesReady(ctx, nodeNames, util.Timeout)).To(gomega.Succeed())

		ginkgo.By("creating namespace " + ns)
		gomega.Expect(suite.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	})

	ginkgo.AfterAll(func(ctx context.Context) {
		if suite.owned && !*keep {
			return // the whole cluster goes down
		}
		ginkgo.By("deleting the run's namespace and nodes")
		err := suite.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		gomega.Expect(err == nil || apierrors.IsNotFound(err)).To(gomega.BeTrue(), "delete namespace: %v", err)
		gomega.Expect(suite.clients.DeleteNodes(ctx, nodeNames)).To(gomega.Succeed())
	})

	ginkgo.It("runs a master and 3 workers of 8 GPUs on four nodes, holds a fifth job while full, and completes on the testbed's signal", func(ctx context.Context) {
		const big, fifth = "resnet-4x8", "bert-1x8"

		ginkgo.By("submitting a PyTorchJob with a master and 3 workers of 8 GPUs")
		job := util.MakePyTorchJob(big, ns).Master(gpusPerNode).Workers(3, gpusPerNode).NodeSelector(selector).Obj()
		gomega.Expect(suite.client.Create(ctx, job)).To(gomega.Succeed())

		ginkgo.By("the training-operator creates its four pods")
		util.ExpectJobPods(ctx, suite.client, ns, big, 4)

		ginkgo.By("kube-scheduler binds them to four different fake nodes")
		bound := util.ExpectPodsOnDistinctNodes(ctx, suite.client, ns, big, 4, nodeNames)
		gomega.Expect(bound).To(gomega.ConsistOf(nodeNames))

		ginkgo.By("the pods run and the job is Running")
		util.ExpectPodsInPhase(ctx, suite.client, ns, big, 4, corev1.PodRunning)
		util.ExpectJobCondition(ctx, suite.client, ns, big, kftraining.JobRunning)

		ginkgo.By("a fifth 8-GPU job stays Pending while every GPU is taken")
		gomega.Expect(suite.client.Create(ctx,
			util.MakePyTorchJob(fifth, ns).Master(gpusPerNode).NodeSelector(selector).Obj())).To(gomega.Succeed())
		util.ExpectUnschedulable(ctx, suite.client, ns, fifth, 1, 5*time.Second)

		ginkgo.By("the pods keep running until the testbed says they are done")
		gomega.Consistently(func(g gomega.Gomega) {
			pods, err := util.JobPods(ctx, suite.client, ns, big)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning))
			}
		}, 2*time.Second, util.Interval).Should(gomega.Succeed())

		ginkgo.By("completing the pods with the completion annotation, standing in for the agent")
		gomega.Expect(util.CompleteJobPods(ctx, suite.client, ns, big)).To(gomega.Succeed())
		util.ExpectPodsInPhase(ctx, suite.client, ns, big, 4, corev1.PodSucceeded)

		ginkgo.By("the job reaches Succeeded")
		util.ExpectJobCondition(ctx, suite.client, ns, big, kftraining.JobSucceeded)

		ginkgo.By("the freed GPUs take the fifth job, which then completes too")
		util.ExpectPodsOnDistinctNodes(ctx, suite.client, ns, fifth, 1, nodeNames)
		util.ExpectPodsInPhase(ctx, suite.client, ns, fifth, 1, corev1.PodRunning)
		gomega.Expect(util.CompleteJobPods(ctx, suite.client, ns, fifth)).To(gomega.Succeed())
		util.ExpectJobCondition(ctx, suite.client, ns, fifth, kftraining.JobSucceeded)
	}, ginkgo.SpecTimeout(5*time.Minute))
})

var _ = ginkgo.Describe("Local testbed cluster", ginkgo.Label("cluster", "local"), func() {
	ginkgo.It("is idempotent: a second up creates nothing and keeps every process", func(ctx context.Context) {
		if !suite.owned {
			ginkgo.Skip("the suite did not bring this cluster up")
		}
		before, err := cluster.GetStatus(ctx, suite.opts)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		info, err := cluster.Up(ctx, suite.opts)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(info.NodesCreated).To(gomega.BeZero())
		gomega.Expect(before.GPUsByProduct).To(gomega.HaveKeyWithValue("Tesla-V100-SXM2-32GB", int64(16)))
		after, err := cluster.GetStatus(ctx, suite.opts)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(after.Processes).To(gomega.Equal(before.Processes))
		gomega.Expect(after.Nodes).To(gomega.Equal(before.Nodes))
		gomega.Expect(after.Processes).To(gomega.HaveKey("training-operator"))
		gomega.Expect(after.Processes).To(gomega.HaveKey("kube-apiserver"))
	}, ginkgo.SpecTimeout(3*time.Minute))
})
