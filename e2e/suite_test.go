//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/testbed/cluster"
)

var (
	kubeconfig = flag.String("kubeconfig", "", "cluster to test; default $KUBECONFIG, else the suite brings up the local testbed cluster")
	keep       = flag.Bool("keep-cluster", false, "leave the cluster the suite brought up running")
)

// suite is what every spec shares.
var suite struct {
	opts    cluster.Options // the local cluster, when the suite owns it
	owned   bool
	clients *cluster.Clients
	client  client.Client
	runID   string
	upTook  time.Duration
}

func TestE2E(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "PickyMan e2e")
}

var _ = ginkgo.BeforeSuite(func(ctx context.Context) {
	suite.runID = fmt.Sprintf("%d", time.Now().Unix()%100000)
	path := *kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		ginkgo.By("bringing the local testbed cluster up")
		suite.opts = cluster.DefaultOptions("")
		suite.opts.Name = "pickyman-e2e"
		suite.opts.Log = ginkgo.GinkgoWriter
		// A pool of its own; the specs create and use their own nodes besides it.
		suite.opts.Pools = []cluster.Pool{{Nodes: 2, GPUsPerNode: 8, Model: "V100"}}
		suite.owned = true
		info, err := cluster.Up(ctx, suite.opts)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		suite.upTook = info.Total()
		path = info.Kubeconfig
		fmt.Fprintf(ginkgo.GinkgoWriter, "cluster up in %v, kubeconfig %s\n", suite.upTook, path)
	}
	var err error
	suite.clients, err = cluster.NewClients(path)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	scheme := runtime.NewScheme()
	gomega.Expect(clientgoscheme.AddToScheme(scheme)).To(gomega.Succeed())
	gomega.Expect(kftraining.AddToScheme(scheme)).To(gomega.Succeed())
	suite.client, err = client.New(suite.clients.Config, client.Options{Scheme: scheme})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}, ginkgo.NodeTimeout(5*time.Minute))

var _ = ginkgo.AfterSuite(func(ctx context.Context) {
	if !suite.owned || *keep {
		return
	}
	ginkgo.By("taking the local testbed cluster down and checking nothing is left")
	gomega.Expect(cluster.Down(ctx, suite.opts)).To(gomega.Succeed())
	st, err := cluster.GetStatus(ctx, suite.opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(st.Exists).To(gomega.BeFalse(), "cluster files left in %s", suite.opts.Workdir())
}, ginkgo.NodeTimeout(2*time.Minute))
