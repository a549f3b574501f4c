//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/replay"
)

var (
	kubeconfig = flag.String("kubeconfig", "", "cluster to test; default $KUBECONFIG, else the suite brings up the local testbed cluster")
	keep       = flag.Bool("keep-cluster", false, "leave the cluster the suite brought up running")
)

// timeScale is the testbed agent's trace seconds per real second.
const timeScale = 60

// operatorConfig is the operator's configuration on the suite's cluster: the pickyman policy,
// a low and a high queue, and times in real seconds (the agent divides trace time by
// timeScale, so the operator sees real-time epochs and checkpoints).
func operatorConfig() *configv1.Configuration {
	c := &configv1.Configuration{
		Queues: []configv1.Queue{{Name: "default"}, {Name: "low"}, {Name: "high", Priority: 100}},
		Policy: configv1.Policy{Name: "pickyman"},
		Overhead: configv1.Overhead{
			// The testbed's physics (testbed/sim.DefaultPhysics), scaled to real time.
			WriteBytesPerSecond: 500e6 * timeScale,
			ReadBytesPerSecond:  1e9 * timeScale,
			ContainerStart:      metav1.Duration{Duration: 20 * time.Second / timeScale},
			Warmup:              metav1.Duration{Duration: 30 * time.Second / timeScale},
			GracePeriod:         metav1.Duration{Duration: 5 * time.Second},
		},
		Protection:         configv1.Protection{MinRunAfterResume: metav1.Duration{Duration: 5 * time.Second}},
		Checkpoint:         configv1.Checkpoint{BoundaryDeadline: metav1.Duration{Duration: time.Minute}, NowDeadline: metav1.Duration{Duration: 20 * time.Second}},
		ScheduleInterval:   metav1.Duration{Duration: 2 * time.Second},
		ReservationTimeout: metav1.Duration{Duration: 2 * time.Minute},
	}
	if sizeConfig != nil {
		sizeConfig(c)
	}
	c.Default()
	return c
}

// sizeConfig, when set, adapts the operator's configuration to the cluster's size: the scale
// spec sets it (scale_settings_test.go) to the settings docs/operator.md gives for 1,000
// nodes; the other specs run the defaults.
var sizeConfig func(*configv1.Configuration)

// requirePickyMan skips a spec that needs PickyMan's operator and the testbed agent on a
// cluster the suite did not bring up (they run as local processes of the suite's cluster).
func requirePickyMan() {
	if suite.opts.PickyMan == nil {
		ginkgo.Skip("needs the local testbed cluster with PickyMan's operator and testbed agent (run make test-cluster)")
	}
}

// suite is what every spec shares.
var suite struct {
	opts    cluster.Options // the local cluster, when the suite owns it
	owned   bool
	clients *cluster.Clients
	client  client.Client
	// watchClient is client with watches (util.WatchGPUs).
	watchClient client.WithWatch
	runID       string
	upTook      time.Duration
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
		// PickyMan as a user installs it: the installer's operator Deployment and agent
		// DaemonSet (testbed overlay) as pods on a real node, from the images of make images.
		// PICKYMAN_E2E_PROCESSES=1 runs them as local processes under their ServiceAccounts
		// instead (development). Trace time runs 60 times faster than real time.
		installed := os.Getenv("PICKYMAN_E2E_PROCESSES") == ""
		suite.opts.PickyMan = &cluster.PickyMan{Config: operatorConfig(), TimeScale: timeScale, Seed: 1, Installed: installed}
		if installed {
			suite.opts.RealNodes = 1
		}
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
	if !suite.owned {
		// A cluster of the user's (make kind-up): PickyMan installed there by its installer
		// with the testbed overlay. The suite runs it with its own configuration.
		suite.opts = cluster.DefaultOptions("")
		suite.opts.Log = ginkgo.GinkgoWriter
		suite.opts.PickyMan = &cluster.PickyMan{Config: operatorConfig(), TimeScale: timeScale, Seed: 1, Installed: true, Kubeconfig: path}
		ginkgo.By("running the installed operator with the suite's configuration")
		gomega.Expect(suite.opts.StartOperator(ctx, suite.clients)).To(gomega.Succeed())
	}
	// The replay's scheme: Kubernetes' types, PickyMan's and every job kind.
	scheme, err := replay.Scheme()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	suite.watchClient, err = client.NewWithWatch(suite.clients.Config, client.Options{Scheme: scheme})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	suite.client = suite.watchClient
}, ginkgo.NodeTimeout(5*time.Minute))

var _ = ginkgo.AfterSuite(func(ctx context.Context) {
	if !suite.owned || *keep {
		return
	}
	saveLogs()
	ginkgo.By("taking the local testbed cluster down and checking nothing is left")
	gomega.Expect(cluster.Down(ctx, suite.opts)).To(gomega.Succeed())
	st, err := cluster.GetStatus(ctx, suite.opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(st.Exists).To(gomega.BeFalse(), "cluster files left in %s", suite.opts.Workdir())
}, ginkgo.NodeTimeout(2*time.Minute))

// saveLogs copies the cluster's component logs to out/e2e-logs/ of the repository, which the
// cluster's removal would otherwise take with it.
func saveLogs() {
	root, err := cluster.RepoRoot("")
	if err != nil {
		return
	}
	dst := filepath.Join(root, "out", "e2e-logs")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return
	}
	srcs, _ := filepath.Glob(filepath.Join(suite.opts.Workdir(), "*.log"))
	more, _ := filepath.Glob(filepath.Join(suite.opts.Workdir(), "logs", "*.log"))
	for _, f := range append(srcs, more...) {
		if data, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644)
		}
	}
	// The installed components' container logs, as <pod>_<container>.log.
	for _, f := range suite.opts.PodLogs(cluster.PickyManNamespace) {
		if data, err := os.ReadFile(f.Path); err == nil {
			_ = os.WriteFile(filepath.Join(dst, f.Name), data, 0o644)
		}
	}
	fmt.Fprintf(ginkgo.GinkgoWriter, "component logs in %s\n", dst)
}
