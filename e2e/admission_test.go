//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// Admission on the testbed: invalid jobs are rejected by the operator's webhook with the field
// and the reason, and a gang that fits only once the cluster is consolidated gets there by
// preempting one job.
var _ = ginkgo.Describe("PickyMan admission", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "admission"), func() {
	const (
		gpusPerNode = 8
		model       = "A10" // no other spec in make test uses this GPU model
	)
	var (
		ns       string
		selector map[string]string
		env      *specEnv
		watcher  *util.GPUWatcher
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		ns = "e2e-admission-" + suite.runID
		selector = map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-a10-" + suite.runID, Nodes: 2, GPUsPerNode: gpusPerNode, Model: model}, nil, true)
		watcher = env.watcher
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("rejects invalid jobs, naming the field and the reason", func(ctx context.Context) {
		training := util.Training{Epochs: 2, EpochTime: time.Minute, DatasetBytes: 1e9, CheckpointBytes: 1e9}
		cases := []struct {
			name string
			job  *kftraining.PyTorchJob
			want []string
		}{
			{"unknown queue", util.MakePyTorchJob("bad-queue", ns).Master(4).NodeSelector(selector).PickyMan("nope", "m", training).Obj(),
				[]string{"metadata.labels[pickyman.dev/queue]", `"nope"`}},
			{"too many GPUs for any node", util.MakePyTorchJob("bad-size", ns).Master(16).NodeSelector(selector).PickyMan("low", "m", training).Obj(),
				[]string{"fits on no node", "8 GPUs"}},
			{"no GPU limit", func() *kftraining.PyTorchJob {
				j := util.MakePyTorchJob("bad-limit", ns).Master(4).NodeSelector(selector).PickyMan("low", "m", training).Obj()
				c := &j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
				c.Resources = corev1.ResourceRequirements{}
				return j
			}(), []string{"GPU limit"}},
		}
		for _, tc := range cases {
			ginkgo.By(tc.name)
			err := suite.client.Create(ctx, tc.job)
			gomega.Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)).To(gomega.BeTrue(), "%s: %v", tc.name, err)
			for _, w := range tc.want {
				gomega.Expect(err.Error()).To(gomega.ContainSubstring(w), tc.name)
			}
			gomega.Expect(apierrors.IsNotFound(suite.client.Get(ctx, client.ObjectKeyFromObject(tc.job), &kftraining.PyTorchJob{}))).To(gomega.BeTrue(),
				"%s: the rejected job exists", tc.name)
		}
	})

	ginkgo.It("consolidates the cluster for a gang that fits only on a whole node", func(ctx context.Context) {
		long := util.Training{Epochs: 20, EpochTime: 2 * time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9}
		short := util.Training{Epochs: 8, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9}
		ginkgo.By("two long and two short 4-GPU jobs fill both nodes, a long and a short on each (best fit)")
		for i, t := range []util.Training{long, short, long, short} {
			name := fmt.Sprintf("frag-%d", i)
			gomega.Expect(suite.client.Create(ctx, util.MakePyTorchJob(name, ns).Master(4).NodeSelector(selector).PickyMan("low", "resnet50", t).Obj())).To(gomega.Succeed())
			expectAllocationPhase(ctx, ns, name, pickymanv1.AllocationAdmitted, util.Timeout)
		}
		ginkgo.By("the short jobs finish: 8 GPUs are free, but 4 on each node")
		for _, name := range []string{"frag-1", "frag-3"} {
			util.ExpectJobConditionWithin(ctx, suite.client, ns, name, kftraining.JobSucceeded, 2*time.Minute)
		}
		free := map[string]int32{}
		for _, name := range []string{"frag-0", "frag-2"} {
			a := expectAllocationPhase(ctx, ns, name, pickymanv1.AllocationAdmitted, util.Timeout)
			free[a.Status.Placement[0].Node] += 4
		}
		// Best fit put each short job beside a long one.
		gomega.Expect(free).To(gomega.HaveLen(2), "the long jobs share a node: nothing is fragmented")

		ginkgo.By("an 8-GPU high-priority job arrives: one long job is preempted and the gang gets a whole node")
		gomega.Expect(suite.client.Create(ctx, util.MakePyTorchJob("frag-gang", ns).Master(gpusPerNode).NodeSelector(selector).
			PickyMan("high", "bert", util.Training{Epochs: 2, EpochTime: time.Minute, DatasetBytes: 10e9, CheckpointBytes: 1e9, Estimate: 3 * time.Second}).Obj())).To(gomega.Succeed())
		a := expectAllocationPhase(ctx, ns, "frag-gang", pickymanv1.AllocationAdmitted, 2*util.Timeout)
		gomega.Expect(a.Status.Placement).To(gomega.HaveLen(1))
		gomega.Expect(a.Status.Placement[0].GPUs).To(gomega.Equal(int32(gpusPerNode)))
		victims := preempted(ctx, ns, []string{"frag-0", "frag-2"})
		gomega.Expect(victims).To(gomega.HaveLen(1), "one preemption consolidates the cluster")

		ginkgo.By("the victim resumes on the other node's free GPUs and every job finishes")
		for _, name := range []string{"frag-0", "frag-2", "frag-gang"} {
			util.ExpectJobConditionWithin(ctx, suite.client, ns, name, kftraining.JobSucceeded, 3*time.Minute)
		}
		checkResumed(ctx, ns, victims[0], watcher, long.Epochs)
		expectNoOverCommit(watcher)
	}, ginkgo.SpecTimeout(8*time.Minute))
})
