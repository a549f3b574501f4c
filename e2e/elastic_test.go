//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// Elastic jobs: an elastic PyTorchJob (Worker replicas 2..4) fills a node; a job that
// arrives makes PickyMan shrink it to 2 workers instead of suspending it (checkpoint at the
// epoch boundary, restart at the new size from that epoch), and once nobody waits it grows
// back to 4 the same way. The real training-operator recreates the pods at each size.
var _ = ginkgo.Describe("PickyMan elastic PyTorchJob", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "elastic"), func() {
	const (
		gpusPerNode = 8
		model       = "A100-40GB" // no other spec uses this GPU model
	)
	var (
		ns  string
		env *specEnv
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		ns = "e2e-elastic-" + suite.runID
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-a10040-" + suite.runID, Nodes: 1, GPUsPerNode: gpusPerNode, Model: model}, nil, true)
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("shrinks an elastic job to admit a waiting one and grows it back afterwards, losing no epoch", func(ctx context.Context) {
		selector := map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}
		const epochs = 40
		train := util.Training{Epochs: epochs, EpochTime: 2 * time.Minute, DatasetBytes: 50e9, CheckpointBytes: 2e9}
		el := util.MakePyTorchJob("elastic", ns).Workers(4, 2).Elastic(2, 4).NodeSelector(selector).PickyMan("low", "resnet50", train).Obj()
		gomega.Expect(suite.client.Create(ctx, el)).To(gomega.Succeed())
		a := expectAllocationPhase(ctx, ns, "elastic", pickymanv1.AllocationAdmitted, util.Timeout)
		gomega.Expect(a.Spec.Elastic).NotTo(gomega.BeNil())
		gomega.Expect(podCountOf(a)).To(gomega.Equal(int32(4)))
		expectProgress(ctx, ns, "elastic", 1)

		ginkgo.By("a 4-GPU job arrives: the elastic job shrinks to 2 workers for it")
		waiter := util.MakePyTorchJob("waiter", ns).Master(4).NodeSelector(selector).
			PickyMan("low", "bert", util.Training{Epochs: 3, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9, Estimate: 10 * time.Second}).Obj()
		gomega.Expect(suite.client.Create(ctx, waiter)).To(gomega.Succeed())
		expectAllocationPhase(ctx, ns, "waiter", pickymanv1.AllocationAdmitted, 2*util.Timeout)
		gomega.Eventually(func(g gomega.Gomega) {
			cur := &pickymanv1.Allocation{}
			g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName("elastic")}, cur)).To(gomega.Succeed())
			g.Expect(cur.Status.Phase).To(gomega.Equal(pickymanv1.AllocationAdmitted))
			g.Expect(podCountOf(cur)).To(gomega.Equal(int32(2)))
			pj := &kftraining.PyTorchJob{}
			g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "elastic"}, pj)).To(gomega.Succeed())
			g.Expect(*pj.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Replicas).To(gomega.Equal(int32(2)))
		}, util.Timeout, util.Interval).Should(gomega.Succeed())
		a = &pickymanv1.Allocation{}
		gomega.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName("elastic")}, a)).To(gomega.Succeed())
		gomega.Expect(a.Status.Preemptions).To(gomega.BeZero(), "the elastic job was resized, not preempted")
		gomega.Expect(a.Status.Resizes).To(gomega.BeNumerically(">=", 1))

		ginkgo.By("the waiting job finishes; nobody waits: the elastic job grows back to 4 workers")
		expectSucceeded(ctx, ns, "waiter", 3*time.Minute)
		gomega.Eventually(func(g gomega.Gomega) {
			cur := &pickymanv1.Allocation{}
			g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName("elastic")}, cur)).To(gomega.Succeed())
			g.Expect(cur.Status.Phase).To(gomega.Equal(pickymanv1.AllocationAdmitted), describeOnNodes(ctx, cur, env.nodes))
			g.Expect(podCountOf(cur)).To(gomega.Equal(int32(4)), describeOnNodes(ctx, cur, env.nodes))
			g.Expect(cur.Status.Resizes).To(gomega.BeNumerically(">=", 2))
		}, 2*util.Timeout, util.Interval).Should(gomega.Succeed())

		ginkgo.By("the elastic job finishes; every restart began at the epoch its checkpoint was written at")
		expectSucceeded(ctx, ns, "elastic", 5*time.Minute)
		checkResizes(ns, "elastic", env.watcher, epochs)
		expectNoOverCommit(env.watcher)
	}, ginkgo.SpecTimeout(10*time.Minute))
})

// describeOnNodes says, for a failure message, where Allocation a stands (phase, last
// condition, placement, reservation, resizes) and which pods hold GPUs on nodes: what a
// job that does not grow or start is waiting for.
func describeOnNodes(ctx context.Context, a *pickymanv1.Allocation, nodes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "allocation %s/%s: phase %s, placement %v, reserved %v, resizes %d, preemptions %d",
		a.Namespace, a.Name, a.Status.Phase, a.Status.Placement, a.Status.Reserved, a.Status.Resizes, a.Status.Preemptions)
	if n := len(a.Status.Conditions); n > 0 {
		c := a.Status.Conditions[n-1]
		fmt.Fprintf(&b, "; last condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	on := map[string]bool{}
	for _, n := range nodes {
		on[n] = true
	}
	var pods corev1.PodList
	if err := suite.client.List(ctx, &pods); err != nil {
		fmt.Fprintf(&b, "; pods: %v", err)
		return b.String()
	}
	for _, p := range pods.Items {
		if on[p.Spec.NodeName] {
			fmt.Fprintf(&b, "; pod %s/%s on %s: %s, GPUs %d, deleting %v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase,
				jobframework.GPULimit(&p.Spec, "nvidia.com/gpu"), p.DeletionTimestamp != nil)
		}
	}
	return b.String()
}

// podCountOf is the number of pods of an Allocation's gang.
func podCountOf(a *pickymanv1.Allocation) int32 {
	var n int32
	for _, s := range a.Spec.PodSets {
		n += s.Count
	}
	return n
}

// checkResizes checks the pods of an elastic job across its resizes: each generation of pods
// was acknowledged at a boundary checkpoint before it went (but the last), the next
// generation resumed from exactly its gang's oldest acknowledged epoch with the world size of
// its generation, no pod
// began before its resume point, and the last generation trained to the end: no epoch lost.
func checkResizes(ns, job string, w *util.GPUWatcher, epochs int32) {
	h := w.History(ns, job)
	// A pod created after a pod of the current generation began to be deleted starts the next
	// generation (the operator recreates the gang only once the old one is gone).
	var gens [][]util.PodRecord
	for _, r := range h {
		if n := len(gens); n > 0 {
			next := false
			for _, o := range gens[n-1] {
				if !o.DeletingSeen.IsZero() && o.DeletingSeen.Before(r.Created) {
					next = true
				}
			}
			if !next {
				gens[n-1] = append(gens[n-1], r)
				continue
			}
		}
		gens = append(gens, []util.PodRecord{r})
	}
	gomega.ExpectWithOffset(1, len(gens)).To(gomega.BeNumerically(">=", 3), "generations of %s's pods: %d (want the first, after the shrink, after the grow)", job, len(gens))
	sizes := []int{}
	for i, g := range gens {
		sizes = append(sizes, len(g))
		// The gang resumes from its oldest checkpoint: the least epoch its pods acknowledged
		// (a pod still starting acknowledges its resume point while another may reach the
		// next epoch's end).
		oldest := int32(-1)
		for _, r := range g {
			if r.Ack != nil && (oldest < 0 || r.Ack.Epoch < oldest) {
				oldest = r.Ack.Epoch
			}
		}
		for _, r := range g {
			gomega.ExpectWithOffset(1, r.FirstProgress).NotTo(gomega.BeNil(), "pod %s never trained", r.Name)
			if r.Resume != nil {
				gomega.ExpectWithOffset(1, r.FirstProgress.Epoch).To(gomega.BeNumerically(">=", r.Resume.Epoch), "pod %s began before its resume point", r.Name)
				if r.Resume.WorldSize > 0 {
					gomega.ExpectWithOffset(1, r.Resume.WorldSize).To(gomega.Equal(int32(len(g))), "pod %s's world size", r.Name)
				}
			}
			if i+1 < len(gens) {
				gomega.ExpectWithOffset(1, r.Ack).NotTo(gomega.BeNil(), "pod %s went without an acknowledgement", r.Name)
				next := gens[i+1][0]
				gomega.ExpectWithOffset(1, next.Resume).NotTo(gomega.BeNil())
				gomega.ExpectWithOffset(1, r.Ack.Epoch).To(gomega.BeNumerically(">=", next.Resume.Epoch), "generation %d resumed from epoch %d, after %s checkpointed %d", i+1, next.Resume.Epoch, r.Name, r.Ack.Epoch)
				gomega.ExpectWithOffset(1, next.Resume.Epoch).To(gomega.Equal(oldest), "generation %d resumed from epoch %d, its gang's oldest checkpoint is %d", i+1, next.Resume.Epoch, oldest)
			} else {
				gomega.ExpectWithOffset(1, r.Progress.EpochsDone).To(gomega.Equal(epochs))
			}
		}
	}
	line := fmt.Sprintf("elastic %s/%s: pod generations of sizes %v", ns, job, sizes)
	ginkgo.AddReportEntry("elastic "+job, line)
	fmt.Fprintln(ginkgo.GinkgoWriter, line)
	gomega.ExpectWithOffset(1, sizes[0]).To(gomega.Equal(4))
	gomega.ExpectWithOffset(1, sizes[1]).To(gomega.Equal(2))
	gomega.ExpectWithOffset(1, sizes[len(sizes)-1]).To(gomega.Equal(4))
}
