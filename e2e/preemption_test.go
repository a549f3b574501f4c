//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// The operator's preemption on the testbed: long low-priority jobs fill two fake nodes, a
// short high-priority job needs a whole node, and PickyMan suspends the two jobs of the
// cheaper node (their checkpoints are far smaller) at their epoch boundary, admits the urgent
// job, and resumes the victims from their checkpointed epoch.
var _ = ginkgo.Describe("PickyMan preemption with the checkpoint handshake", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "preemption"), func() {
	const (
		gpusPerNode = 8
		model       = "H100" // no other spec uses this GPU model, so no other job lands here
	)
	var (
		ns      string
		env     *specEnv
		watcher *util.GPUWatcher
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		ns = "e2e-preempt-" + suite.runID
		ginkgo.By("creating two fake nodes of 8 GPUs, watching every pod and Allocation for a node promised more GPUs than it has")
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-h100-" + suite.runID, Nodes: 2, GPUsPerNode: gpusPerNode, Model: model}, nil, true)
		watcher = env.watcher
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	// fill submits four low-priority 4-GPU jobs whose checkpoints differ by orders of
	// magnitude, waits until they all run and report progress, and returns the two jobs on the
	// node whose checkpoints are the smaller: the cheapest victims for an 8-GPU job.
	fill := func(ctx context.Context, prefix string, training util.Training) (jobs, cheapest []string, size map[string]int64) {
		ckpt := []int64{1e9, 2e9, 200e9, 400e9}
		size = map[string]int64{}
		for i, b := range ckpt {
			name := fmt.Sprintf("%s-%d", prefix, i)
			t := training
			t.CheckpointBytes = b
			size[name] = b
			jobs = append(jobs, name)
			job := util.MakePyTorchJob(name, ns).Master(4).NodeSelector(map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}).
				PickyMan("low", "resnet50", t).Obj()
			gomega.Expect(suite.client.Create(ctx, job)).To(gomega.Succeed())
		}
		ginkgo.By("the four low-priority jobs are admitted, pinned two per node, and train")
		nodeOf := map[string]string{}
		for _, j := range jobs {
			a := expectAllocationPhase(ctx, ns, j, pickymanv1.AllocationAdmitted, util.Timeout)
			gomega.Expect(a.Status.Placement).To(gomega.HaveLen(1))
			nodeOf[j] = a.Status.Placement[0].Node
			expectProgress(ctx, ns, j, 1)
		}
		byNode := map[string][]string{}
		cost := map[string]int64{}
		for _, j := range jobs {
			byNode[nodeOf[j]] = append(byNode[nodeOf[j]], j)
			cost[nodeOf[j]] += size[j]
		}
		gomega.Expect(byNode).To(gomega.HaveLen(2), "placements %v", nodeOf)
		best := ""
		for n := range byNode {
			if best == "" || cost[n] < cost[best] {
				best = n
			}
		}
		cheapest = byNode[best]
		sort.Strings(cheapest)
		return jobs, cheapest, size
	}

	ginkgo.It("suspends the cheapest victims at their epoch boundary for a high-priority job, resumes them from the checkpointed epoch, and finishes every job", func(ctx context.Context) {
		long := util.Training{Epochs: 30, EpochTime: 2 * time.Minute, DatasetBytes: 50e9}
		jobs, cheapest, size := fill(ctx, "low", long)

		ginkgo.By("submitting a short high-priority job that needs a whole node, with its declared run time")
		urgent := util.MakePyTorchJob("urgent", ns).Master(gpusPerNode).NodeSelector(map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}).
			PickyMan("high", "bert", util.Training{Epochs: 3, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9, Estimate: 5 * time.Second}).Obj()
		gomega.Expect(suite.client.Create(ctx, urgent)).To(gomega.Succeed())
		expectAllocationPhase(ctx, ns, "urgent", pickymanv1.AllocationAdmitted, 2*util.Timeout)

		ginkgo.By("exactly the two jobs of the cheaper node were preempted")
		victims := preempted(ctx, ns, jobs)
		gomega.Expect(victims).To(gomega.Equal(cheapest))

		for _, v := range victims {
			checkBoundaryCheckpoint(ctx, ns, v, watcher, size[v])
		}
		for _, v := range victims {
			reportLatency(ns, v, watcher)
		}

		ginkgo.By("every job finishes; the victims resume from their checkpointed epoch and lose none")
		for _, j := range append(jobs, "urgent") {
			util.ExpectJobConditionWithin(ctx, suite.client, ns, j, kftraining.JobSucceeded, 5*time.Minute)
		}
		for _, v := range victims {
			checkResumed(ctx, ns, v, watcher, long.Epochs)
		}
		expectNoOverCommit(watcher)
	}, ginkgo.SpecTimeout(10*time.Minute))

	ginkgo.It("loses nothing and preempts no job twice when the operator is killed in the middle of a handshake", func(ctx context.Context) {
		// Epochs of 10 s real time: the victims' boundary handshake lasts long enough to
		// kill the operator inside it.
		long := util.Training{Epochs: 8, EpochTime: 10 * time.Minute, DatasetBytes: 50e9}
		jobs, cheapest, size := fill(ctx, "crash", long)

		ginkgo.By("submitting the urgent job and waiting for the handshake to begin")
		urgent := util.MakePyTorchJob("urgent-crash", ns).Master(gpusPerNode).NodeSelector(map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}).
			PickyMan("high", "bert", util.Training{Epochs: 2, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9, Estimate: 5 * time.Second}).Obj()
		gomega.Expect(suite.client.Create(ctx, urgent)).To(gomega.Succeed())
		var preempting []string
		gomega.Eventually(func(g gomega.Gomega) {
			preempting = preempting[:0]
			for _, j := range jobs {
				a := &pickymanv1.Allocation{}
				g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName(j)}, a)).To(gomega.Succeed())
				if a.Status.Phase == pickymanv1.AllocationPreempting {
					preempting = append(preempting, j)
				}
			}
			g.Expect(preempting).NotTo(gomega.BeEmpty())
		}, util.Timeout, 50*time.Millisecond).Should(gomega.Succeed())

		crashOperator(ctx, fmt.Sprintf("while %v are Preempting", preempting))

		expectAllocationPhase(ctx, ns, "urgent-crash", pickymanv1.AllocationAdmitted, 2*util.Timeout)
		victims := preempted(ctx, ns, jobs)
		gomega.Expect(victims).To(gomega.Equal(cheapest))
		for _, v := range victims {
			a := &pickymanv1.Allocation{}
			gomega.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName(v)}, a)).To(gomega.Succeed())
			gomega.Expect(a.Status.Preemptions).To(gomega.Equal(int32(1)), "preemptions of %s", v)
			checkBoundaryCheckpoint(ctx, ns, v, watcher, size[v])
		}

		ginkgo.By("every job finishes; the victims resume from their checkpointed epoch")
		for _, j := range append(jobs, "urgent-crash") {
			util.ExpectJobConditionWithin(ctx, suite.client, ns, j, kftraining.JobSucceeded, 5*time.Minute)
		}
		for _, v := range victims {
			checkResumed(ctx, ns, v, watcher, long.Epochs)
		}
		for _, j := range jobs {
			if !slices.Contains(victims, j) {
				a := &pickymanv1.Allocation{}
				gomega.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName(j)}, a)).To(gomega.Succeed())
				gomega.Expect(a.Status.Preemptions).To(gomega.BeZero(), "%s was not a victim", j)
			}
		}
		expectNoOverCommit(watcher)
	}, ginkgo.SpecTimeout(10*time.Minute))
})

// expectAllocationPhase waits until the job's Allocation is in phase and returns it.
func expectAllocationPhase(ctx context.Context, ns, job string, phase pickymanv1.AllocationPhase, timeout time.Duration) *pickymanv1.Allocation {
	a := &pickymanv1.Allocation{}
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		g.Expect(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName(job)}, a)).To(gomega.Succeed())
		g.Expect(a.Status.Phase).To(gomega.Equal(phase), "Allocation of %s/%s; conditions %v", ns, job, a.Status.Conditions)
	}, timeout, util.Interval).Should(gomega.Succeed())
	return a
}

// expectProgress waits until every pod of the job reports at least epochs finished epochs.
func expectProgress(ctx context.Context, ns, job string, epochs int32) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods, err := gpuPods(ctx, ns, job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(pods).NotTo(gomega.BeEmpty())
		for i := range pods {
			pr, err := util.PodProgress(&pods[i])
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(pr).NotTo(gomega.BeNil(), "pod %s reports no progress", pods[i].Name)
			g.Expect(pr.EpochsDone).To(gomega.BeNumerically(">=", epochs))
		}
	}, util.Timeout, util.Interval).Should(gomega.Succeed())
}

// preempted returns, sorted, the jobs whose Allocation counts a preemption.
func preempted(ctx context.Context, ns string, jobs []string) []string {
	var out []string
	for _, j := range jobs {
		a := &pickymanv1.Allocation{}
		gomega.ExpectWithOffset(1, suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName(j)}, a)).To(gomega.Succeed())
		if a.Status.Preemptions > 0 {
			out = append(out, j)
		}
	}
	sort.Strings(out)
	return out
}

// checkBoundaryCheckpoint checks a victim's handshake from what the watcher saw of its first
// pod: one boundary request, an acknowledgement of that request with a checkpoint written at
// an epoch boundary, and the acknowledgement before the pod began to be deleted; and that the
// Allocation records that epoch to resume from.
func checkBoundaryCheckpoint(ctx context.Context, ns, job string, w *util.GPUWatcher, ckptBytes int64) {
	ginkgo.By("victim " + job + " checkpointed at its epoch boundary before its pod was deleted")
	var first util.PodRecord
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		h := w.History(ns, job)
		g.Expect(h).NotTo(gomega.BeEmpty())
		first = h[0]
		g.Expect(first.DeletingSeen.IsZero()).To(gomega.BeFalse(), "first pod of %s not deleted yet", job)
	}, util.Timeout, util.Interval).Should(gomega.Succeed())
	gomega.ExpectWithOffset(1, first.Requests).To(gomega.HaveLen(1), "checkpoint requests on %s", first.Name)
	gomega.ExpectWithOffset(1, first.Request.Mode).To(gomega.Equal(agentv1alpha1.ModeBoundary))
	gomega.ExpectWithOffset(1, first.Ack).NotTo(gomega.BeNil(), "%s was deleted without an acknowledgement", first.Name)
	gomega.ExpectWithOffset(1, first.Ack.RequestID).To(gomega.Equal(first.Request.ID))
	gomega.ExpectWithOffset(1, first.Ack.Bytes).To(gomega.Equal(ckptBytes), "a boundary checkpoint writes the job's checkpoint")
	gomega.ExpectWithOffset(1, first.Ack.Epoch).To(gomega.BeNumerically(">=", 1))
	gomega.ExpectWithOffset(1, first.Progress.EpochsDone).To(gomega.Equal(first.Ack.Epoch), "the checkpoint is at the last finished epoch")
	gomega.ExpectWithOffset(1, first.AckSeen.After(first.DeletingSeen)).To(gomega.BeFalse(), "acknowledged at %v, deleted at %v", first.AckSeen, first.DeletingSeen)
	a := &pickymanv1.Allocation{}
	gomega.ExpectWithOffset(1, suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: allocName(job)}, a)).To(gomega.Succeed())
	gomega.ExpectWithOffset(1, a.Status.ResumeEpoch).To(gomega.Equal(first.Ack.Epoch))
	c := meta.FindStatusCondition(a.Status.Conditions, pickymanv1.ConditionSuspended)
	gomega.ExpectWithOffset(1, c).NotTo(gomega.BeNil())
	gomega.ExpectWithOffset(1, c.Reason).To(gomega.Equal("Acknowledged"))
}

// checkResumed checks that the victim's pod after the preemption resumed from the
// acknowledged epoch and ran to the last epoch.
func checkResumed(_ context.Context, ns, job string, w *util.GPUWatcher, epochs int32) {
	h := w.History(ns, job)
	gomega.ExpectWithOffset(1, len(h)).To(gomega.BeNumerically(">=", 2), "pods of %s", job)
	first, last := h[0], h[len(h)-1]
	gomega.ExpectWithOffset(1, last.Resume).NotTo(gomega.BeNil(), "resumed pod of %s has no resume point", job)
	gomega.ExpectWithOffset(1, last.Resume.Epoch).To(gomega.Equal(first.Ack.Epoch))
	gomega.ExpectWithOffset(1, last.FirstProgress).NotTo(gomega.BeNil())
	gomega.ExpectWithOffset(1, last.FirstProgress.Epoch).To(gomega.BeNumerically(">=", first.Ack.Epoch), "the resumed pod starts at the checkpointed epoch")
	gomega.ExpectWithOffset(1, last.Progress.EpochsDone).To(gomega.Equal(epochs))
}

// reportLatency splits the time from the preemption decision (the Allocation seen
// Preempting) to the victim's GPUs being free (its pod gone) into the API latency before the
// request reached the pod, the wait for the epoch boundary, the checkpoint write, and the API
// latency from the acknowledgement to the pod being gone; it prints the split and checks that
// the parts add up.
func reportLatency(ns, job string, w *util.GPUWatcher) {
	h := w.History(ns, job)
	gomega.ExpectWithOffset(1, h).NotTo(gomega.BeEmpty())
	first := h[0]
	var gone util.PodRecord
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		gone = w.History(ns, job)[0]
		g.Expect(gone.GoneSeen.IsZero()).To(gomega.BeFalse(), "the first pod of %s is not gone yet", job)
	}, util.Timeout, util.Interval).Should(gomega.Succeed())
	decided := w.PreemptingSeen(ns, allocName(job), 1)
	gomega.ExpectWithOffset(1, decided.IsZero()).To(gomega.BeFalse())
	total := gone.GoneSeen.Sub(decided)
	toPod := first.RequestSeen.Sub(decided)
	suspend := time.Duration(first.Ack.SuspendSeconds * float64(time.Second))
	write := time.Duration(first.Ack.Seconds * float64(time.Second))
	afterAck := gone.GoneSeen.Sub(first.AckSeen)
	// What is left is the agent noticing the request on the pod (it lists pods every second).
	notice := total - toPod - suspend - afterAck
	line := fmt.Sprintf("preemption %s/%s: decision to GPUs free %v = request to pod %v + agent notices %v + epoch wait %v + checkpoint %v + ack to pod gone %v",
		ns, job, total.Round(time.Millisecond), toPod.Round(time.Millisecond), notice.Round(time.Millisecond),
		(suspend - write).Round(time.Millisecond), write.Round(time.Millisecond), afterAck.Round(time.Millisecond))
	ginkgo.AddReportEntry("preemption latency "+job, line)
	fmt.Fprintln(ginkgo.GinkgoWriter, line)
	gomega.ExpectWithOffset(1, toPod).To(gomega.BeNumerically(">=", 0))
	gomega.ExpectWithOffset(1, afterAck).To(gomega.BeNumerically(">=", 0))
	gomega.ExpectWithOffset(1, total).To(gomega.BeNumerically(">=", suspend))
}

// expectNoOverCommit fails on any moment the watcher saw a node promised more GPUs than it has.
func expectNoOverCommit(w *util.GPUWatcher) {
	v, events := w.Violations()
	gomega.ExpectWithOffset(1, events).To(gomega.BeNumerically(">", 0), "the watcher saw nothing")
	gomega.ExpectWithOffset(1, v).To(gomega.BeEmpty())
}

// crashOperator kills the operator that schedules. Installed, that is the leader pod, deleted
// at once: the other replica must take the lease over and carry on. As a local process, the
// one operator is killed and started again, and takes its lease back.
func crashOperator(ctx context.Context, when string) {
	if suite.opts.PickyMan.Installed {
		leader, err := suite.opts.OperatorLeader(ctx, suite.clients)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ginkgo.By(fmt.Sprintf("killing the leader pod %s %s", leader, when))
		killed := time.Now()
		gomega.Expect(cluster.KillOperatorPod(ctx, suite.clients, leader)).To(gomega.Succeed())
		ginkgo.By("the other replica takes the lease over and continues the handshake")
		gomega.Eventually(func() (string, error) { return suite.opts.OperatorLeader(ctx, suite.clients) }).
			WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).ShouldNot(gomega.Or(gomega.BeEmpty(), gomega.Equal(leader)))
		line := fmt.Sprintf("leader pod %s killed %s; the other replica holds the lease %v later", leader, when, time.Since(killed).Round(100*time.Millisecond))
		ginkgo.AddReportEntry("leader killed", line)
		fmt.Fprintln(ginkgo.GinkgoWriter, line)
		return
	}
	ginkgo.By("killing the operator (SIGKILL) " + when)
	gomega.Expect(suite.opts.StopComponent(cluster.ComponentOperator, true)).To(gomega.Succeed())
	gomega.Expect(suite.opts.ComponentPid(cluster.ComponentOperator)).To(gomega.BeZero())
	time.Sleep(2 * time.Second)
	ginkgo.By("starting it again; it takes the lease over and continues the handshake")
	gomega.Expect(suite.opts.StartOperator(ctx, suite.clients)).To(gomega.Succeed())
}
