//go:build e2e

package e2e

import (
	"context"
	"strings"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/e2e/util"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// specEnv is what one spec creates for itself: fake nodes of one pool, Ready, and a
// namespace; optionally a watcher of every pod and Allocation.
type specEnv struct {
	ns      string
	nodes   []string
	watcher *util.GPUWatcher
	stop    context.CancelFunc
}

// newSpecEnv creates the pool's nodes (after edit, if set, changed each one) and the
// namespace, and with watch starts a GPUWatcher that lives until cleanup.
func newSpecEnv(ctx context.Context, ns string, pool cluster.Pool, edit func(*corev1.Node), watch bool) *specEnv {
	e := &specEnv{ns: ns}
	built := cluster.BuildNodes([]cluster.Pool{pool})
	for _, n := range built {
		if edit != nil {
			edit(n)
		}
		e.nodes = append(e.nodes, n.Name)
	}
	_, err := suite.clients.EnsureNodes(ctx, built)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(1, suite.clients.WaitNodesReady(ctx, e.nodes, util.Timeout)).To(gomega.Succeed())
	gomega.ExpectWithOffset(1, suite.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	if watch {
		wctx, cancel := context.WithCancel(context.Background())
		e.stop = cancel
		e.watcher, err = util.WatchGPUs(wctx, suite.clients.Kube, suite.watchClient)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	}
	return e
}

// cleanup stops the watcher and, on a cluster the suite does not take down (or one it keeps),
// deletes the namespace and the nodes. A nil env (the spec was skipped) does nothing.
func (e *specEnv) cleanup(ctx context.Context) {
	if e == nil {
		return
	}
	if e.stop != nil {
		e.stop()
	}
	if suite.owned && !*keep {
		return
	}
	_ = suite.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
	_ = suite.clients.DeleteNodes(ctx, e.nodes)
}

// allocName is the name of the Allocation of a job of the suites: RayJobs are named "ray-...",
// TrainJobs "tj-...", every other job is a PyTorchJob (jobframework.AllocationName).
func allocName(job string) string {
	if strings.HasPrefix(job, "ray-") {
		return jobframework.AllocationName("RayJob", job)
	}
	if strings.HasPrefix(job, "tj-") {
		return jobframework.AllocationName("TrainJob", job)
	}
	return jobframework.AllocationName("PyTorchJob", job)
}

// gpuPods lists the pods of a job that PickyMan places (they carry its Allocation label).
func gpuPods(ctx context.Context, ns, job string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := suite.client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{pickymanv1.LabelAllocation: allocName(job)})
	return list.Items, err
}
