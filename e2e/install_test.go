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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// The installed product: PickyMan as the installer put it on the cluster (two operator
// replicas and the agent, pods from the project's images on the real node), what a half
// installed PickyMan lets through, and an uninstall that leaves nothing behind.
var _ = ginkgo.Describe("PickyMan installed by its installer", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "install"), func() {
	// No other spec uses this GPU model, so the job this spec leaves unmanaged for a moment
	// never shares a node with PickyMan's jobs of another spec.
	const model = "A30"
	var (
		ns  string
		env *specEnv
	)
	training := util.Training{Epochs: 2, EpochTime: time.Minute, DatasetBytes: 1e9, CheckpointBytes: 1e9}
	selector := func() map[string]string {
		return map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}
	}

	ginkgo.BeforeAll(func(ctx context.Context) {
		requireInstalled()
		ns = "e2e-install-" + suite.runID
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-install-" + suite.runID, Nodes: 1, GPUsPerNode: 4, Model: model}, nil, false)
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("runs two operator replicas from the project's image, one elected leader, and admits a PyTorchJob", func(ctx context.Context) {
		img, err := cluster.DefaultImageArchives(suite.opts.BinDir)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		// The agent's DaemonSet runs the testbed agent (simulated training on the kwok nodes)
		// in its container and the agent's image in its init container.
		images := map[string]string{cluster.ComponentOperator: img.OperatorTag, cluster.ComponentAgent: img.TestbedAgentTag}
		initImages := map[string]string{cluster.ComponentOperator: img.OperatorTag, cluster.ComponentAgent: img.AgentTag}
		for component, image := range images {
			pods, err := cluster.RunningPods(ctx, suite.clients, component)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			want := 1
			if component == cluster.ComponentOperator {
				want = cluster.OperatorReplicas
			}
			gomega.Expect(pods).To(gomega.HaveLen(want), "running %s pods", component)
			for _, p := range pods {
				node := &corev1.Node{}
				gomega.Expect(suite.client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(gomega.Succeed())
				gomega.Expect(node.Labels).To(gomega.HaveKeyWithValue(cluster.RealNodeLabel, "true"), "%s runs on a real node", p.Name)
				for _, c := range p.Spec.Containers {
					gomega.Expect(c.Image).To(gomega.Equal(image), "%s container %s", p.Name, c.Name)
				}
				for _, c := range p.Spec.InitContainers {
					gomega.Expect(c.Image).To(gomega.Equal(initImages[component]), "%s init container %s", p.Name, c.Name)
				}
				gomega.Expect(podReady(&p)).To(gomega.BeTrue(), "%s is Ready", p.Name)
			}
		}
		leader, err := suite.opts.OperatorLeader(ctx, suite.clients)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		fmt.Fprintf(ginkgo.GinkgoWriter, "leader %s\n", leader)

		ginkgo.By("a PyTorchJob is admitted through the webhooks the API server calls by their Service, and finishes")
		gomega.Expect(suite.client.Create(ctx, util.MakePyTorchJob("installed", ns).Master(2).NodeSelector(selector()).PickyMan("low", "resnet50", training).Obj())).To(gomega.Succeed())
		expectAllocationPhase(ctx, ns, "installed", pickymanv1.AllocationAdmitted, util.Timeout)
		util.ExpectJobConditionWithin(ctx, suite.client, ns, "installed", kftraining.JobSucceeded, 2*time.Minute)
	}, ginkgo.SpecTimeout(4*time.Minute))

	ginkgo.It("with the operator scaled to zero, creates an unmanaged job and refuses a managed one, saying why", func(ctx context.Context) {
		gomega.Expect(suite.opts.StopComponent(cluster.ComponentOperator, false)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx context.Context) {
			gomega.Expect(suite.opts.StartOperator(ctx, suite.clients)).To(gomega.Succeed())
		})
		unmanaged := util.MakePyTorchJob("unmanaged", ns).Master(1).NodeSelector(selector()).Obj()
		gomega.Expect(unmanaged.Labels).NotTo(gomega.HaveKey(pickymanv1.LabelQueue))
		gomega.Expect(suite.client.Create(ctx, unmanaged)).To(gomega.Succeed(), "an unmanaged PyTorchJob while PickyMan is down")
		// Its pod would hold a GPU outside PickyMan's accounting for the rest of the suite.
		ginkgo.DeferCleanup(func(ctx context.Context) {
			gomega.Expect(client.IgnoreNotFound(suite.client.Delete(ctx, unmanaged, client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(gomega.Succeed())
		})

		err := suite.client.Create(ctx, util.MakePyTorchJob("managed-down", ns).Master(1).NodeSelector(selector()).PickyMan("low", "resnet50", training).Obj())
		gomega.Expect(err).To(gomega.HaveOccurred(), "a managed PyTorchJob created with no operator serving")
		gomega.Expect(err.Error()).To(gomega.And(gomega.ContainSubstring("pytorchjob.pickyman.dev"), gomega.ContainSubstring("failed calling webhook")))
		fmt.Fprintf(ginkgo.GinkgoWriter, "refused: %v\n", err)
		gomega.Expect(apierrors.IsNotFound(suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "managed-down"}, &kftraining.PyTorchJob{}))).To(gomega.BeTrue())
	}, ginkgo.SpecTimeout(4*time.Minute))

	ginkgo.It("uninstalls leaving nothing behind, and installs again", func(ctx context.Context) {
		ginkgo.By("deleting every object of the installer")
		left, err := suite.opts.UninstallPickyMan(ctx, suite.clients)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(left).To(gomega.BeEmpty(), "objects of the installer left after uninstall")
		nsList := &corev1.NamespaceList{}
		gomega.Expect(suite.client.List(ctx, nsList)).To(gomega.Succeed())
		for _, n := range nsList.Items {
			gomega.Expect(n.Name).NotTo(gomega.Equal(cluster.PickyManNamespace))
		}

		ginkgo.By("installing again from the installer")
		start := time.Now()
		gomega.Expect(suite.opts.InstallPickyMan(ctx, suite.clients)).To(gomega.Succeed())
		line := fmt.Sprintf("install to Ready: %v", time.Since(start).Round(time.Millisecond))
		ginkgo.AddReportEntry("install", line)
		fmt.Fprintln(ginkgo.GinkgoWriter, line)
	}, ginkgo.SpecTimeout(6*time.Minute))
})

// requireInstalled fails a spec that needs PickyMan installed by its installer where the
// suite runs it as local processes.
func requireInstalled() {
	requirePickyMan()
	if !suite.opts.PickyMan.Installed {
		ginkgo.Fail("PickyMan runs as local processes on this cluster; the installed product is what the suites test (PICKYMAN_E2E_PROCESSES unset)")
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
