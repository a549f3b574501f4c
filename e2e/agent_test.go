//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// The node agent in testbed mode: one process serves every fake node, publishes their GPU
// labels and dcgm-exporter metrics, and simulates the training of the pods bound to them
// until they complete.
var _ = ginkgo.Describe("Agent in testbed mode on 100 fake nodes", ginkgo.Ordered, ginkgo.Label("cluster", "pickyman", "agent"), func() {
	const (
		nodes       = 100
		gpusPerNode = 8
		model       = "L4" // no other spec uses this GPU model
	)
	var (
		ns        string
		nodeNames []string
		env       *specEnv
	)

	ginkgo.BeforeAll(func(ctx context.Context) {
		requirePickyMan()
		ns = "e2e-agent-" + suite.runID
		ginkgo.By(fmt.Sprintf("creating %d fake nodes without the GPU count label", nodes))
		env = newSpecEnv(ctx, ns, cluster.Pool{Name: "e2e-l4-" + suite.runID, Nodes: nodes, GPUsPerNode: gpusPerNode, Model: model},
			func(n *corev1.Node) { delete(n.Labels, cluster.LabelGPUCount) }, false)
		nodeNames = env.nodes
	})

	ginkgo.AfterAll(func(ctx context.Context) { env.cleanup(ctx) })

	ginkgo.It("publishes the GPU labels and metrics of every node and drives a PyTorchJob's pods to completion", func(ctx context.Context) {
		ginkgo.By("every node gets the GPU feature-discovery count label from the agent")
		gomega.Eventually(func(g gomega.Gomega) {
			for _, name := range nodeNames {
				n, err := suite.clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(gomega.HaveOccurred())
				g.Expect(n.Labels).To(gomega.HaveKeyWithValue(cluster.LabelGPUCount, fmt.Sprint(gpusPerNode)), "node %s", name)
			}
		}, time.Minute, time.Second).Should(gomega.Succeed())

		ginkgo.By("the agent's metrics have a utilization series for every GPU of every node")
		served := map[string]bool{}
		for _, n := range nodeNames {
			served[n] = true
		}
		gomega.Eventually(func(g gomega.Gomega) {
			fams, err := scrape(suite.opts.AgentMetricsURL())
			g.Expect(err).NotTo(gomega.HaveOccurred())
			seen := 0
			for _, m := range fams["pickyman_agent_gpu_utilization_percent"].GetMetric() {
				if served[label(m, "Hostname")] {
					seen++
				}
			}
			g.Expect(seen).To(gomega.Equal(nodes * gpusPerNode))
			g.Expect(fams).To(gomega.HaveKey("pickyman_agent_gpu_memory_used_mib"))
			g.Expect(fams).To(gomega.HaveKey("pickyman_agent_gpu_memory_free_mib"))
		}, time.Minute, time.Second).Should(gomega.Succeed())

		ginkgo.By("a PyTorchJob of a master and 3 workers of 8 GPUs trains on four of them")
		const job = "agent-driven"
		training := util.Training{Epochs: 4, EpochTime: 2 * time.Minute, DatasetBytes: 20e9, CheckpointBytes: 2e9}
		gomega.Expect(suite.client.Create(ctx, util.MakePyTorchJob(job, ns).Master(gpusPerNode).Workers(3, gpusPerNode).
			NodeSelector(map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(model).Product}).
			PickyMan("default", "gpt2", training).Obj())).To(gomega.Succeed())
		util.ExpectPodsInPhase(ctx, suite.client, ns, job, 4, corev1.PodRunning)

		ginkgo.By("while it trains, its GPUs are busy in the metrics, labelled with its pods")
		gomega.Eventually(func(g gomega.Gomega) {
			fams, err := scrape(suite.opts.AgentMetricsURL())
			g.Expect(err).NotTo(gomega.HaveOccurred())
			busy := 0
			for _, m := range fams["pickyman_agent_gpu_utilization_percent"].GetMetric() {
				if label(m, "namespace") == ns && strings.HasPrefix(label(m, "pod"), job+"-") && m.GetGauge().GetValue() > 50 {
					busy++
				}
			}
			g.Expect(busy).To(gomega.Equal(4 * gpusPerNode))
		}, util.Timeout, util.Interval).Should(gomega.Succeed())

		ginkgo.By("the agent completes the pods after their last epoch and the job succeeds")
		util.ExpectJobConditionWithin(ctx, suite.client, ns, job, kftraining.JobSucceeded, 2*time.Minute)
		// The job succeeds with its master; a worker may complete a moment later.
		var pods []corev1.Pod
		gomega.Eventually(func(g gomega.Gomega) {
			pods = util.ExpectJobPods(ctx, suite.client, ns, job, 4)
			for i := range pods {
				g.Expect(pods[i].Status.Phase).To(gomega.Equal(corev1.PodSucceeded), "pod %s", pods[i].Name)
			}
		}, util.Timeout, util.Interval).Should(gomega.Succeed())
		for i := range pods {
			pr, err := util.PodProgress(&pods[i])
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(pr).NotTo(gomega.BeNil())
			gomega.Expect(pr.EpochsDone).To(gomega.Equal(training.Epochs), "pod %s", pods[i].Name)
			gomega.Expect(pr.ReadBytes).To(gomega.BeNumerically(">", 0), "pod %s read nothing", pods[i].Name)
		}
	}, ginkgo.SpecTimeout(6*time.Minute))
})

// scrape reads a Prometheus text endpoint.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url) //nolint:noctx // bounded by the client's timeout
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
