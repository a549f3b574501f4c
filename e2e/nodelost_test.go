//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// A node lost under a running job: the fake node a job trains on is deleted; PickyMan sends
// the job back to the queue at once (its pods there can acknowledge nothing), the pod
// garbage collector removes the orphaned pods, and the job resumes on the other node from
// the epoch it had completed and finishes.
var _ = ginkgo.Describe("PickyMan with a node lost under a running job", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "nodelost"), func() {
	const (
		gpusPerNode = 4
		model       = "A40" // no other spec uses this GPU model
	)
	var (
		ns  string
		env *specEnv
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		ns = "e2e-nodelost-" + suite.runID
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-a40-" + suite.runID, Nodes: 2, GPUsPerNode: gpusPerNode, Model: model}, nil, true)
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("requeues the job of a deleted node and finishes it on another node from its last epoch", func(ctx context.Context) {
		selector := map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}
		const epochs = 12
		train := util.Training{Epochs: epochs, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9}
		gomega.Expect(suite.client.Create(ctx, util.MakePyTorchJob("orphan", ns).Master(gpusPerNode).NodeSelector(selector).PickyMan("low", "resnet50", train).Obj())).To(gomega.Succeed())
		a := expectAllocationPhase(ctx, ns, "orphan", pickymanv1.AllocationAdmitted, util.Timeout)
		gomega.Expect(a.Status.Placement).To(gomega.HaveLen(1))
		lost := a.Status.Placement[0].Node
		expectProgress(ctx, ns, "orphan", 2)

		ginkgo.By("deleting the node " + lost + " the job trains on")
		deleted := time.Now()
		gomega.Expect(suite.clients.DeleteNodes(ctx, []string{lost})).To(gomega.Succeed())

		ginkgo.By("the job is requeued (NodeLost) and admitted on the other node")
		gomega.Eventually(func(g gomega.Gomega) {
			cur := &pickymanv1.Allocation{}
			g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName("orphan")}, cur)).To(gomega.Succeed())
			g.Expect(cur.Status.Preemptions).To(gomega.BeNumerically(">=", 1))
			g.Expect(cur.Status.Phase).To(gomega.Equal(pickymanv1.AllocationAdmitted))
			g.Expect(cur.Status.Placement).To(gomega.HaveLen(1))
			g.Expect(cur.Status.Placement[0].Node).NotTo(gomega.Equal(lost))
			a = cur
		}, 3*util.Timeout, util.Interval).Should(gomega.Succeed())
		recovered := time.Since(deleted)
		gomega.Expect(a.Status.ResumeEpoch).To(gomega.BeNumerically(">=", 2), "resumed from epoch %d, after 2 were done", a.Status.ResumeEpoch)
		line := fmt.Sprintf("nodelost: node deleted under a running job; re-admitted on %s after %.1f s, resuming from epoch %d", a.Status.Placement[0].Node, recovered.Seconds(), a.Status.ResumeEpoch)
		ginkgo.AddReportEntry("nodelost", line)
		fmt.Fprintln(ginkgo.GinkgoWriter, line)

		ginkgo.By("the job finishes on the other node")
		expectSucceeded(ctx, ns, "orphan", 3*time.Minute)
		expectNoOverCommit(env.watcher)
	}, ginkgo.SpecTimeout(8*time.Minute))
})
