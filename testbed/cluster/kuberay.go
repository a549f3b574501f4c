package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// KubeRay in the testbed: KubeRay's own RayCluster and RayJob controllers (tools/kuberay builds
// them from the ray-operator module into bin/kuberay-operator) run as a local process with the
// admin kubeconfig, and the RayCluster, RayJob and RayService CRDs are installed from the same
// module source. No Ray runs in the pods: the Ray dashboard KubeRay submits jobs to and polls
// is the testbed dashboard of tools/kuberay, which reports a job done once the testbed agent
// has completed the simulated training of every GPU pod of its RayCluster.
const kubeRayComponent = "kuberay-operator"

func (o Options) kubeRayLog() string { return filepath.Join(o.Workdir(), kubeRayComponent+".log") }
func (o Options) kubeRayPid() string { return filepath.Join(o.Workdir(), kubeRayComponent+".pid") }

// startKubeRay starts KubeRay's controllers unless they run, and waits until their readiness
// probe answers and both controllers have started their workers.
func (o Options) startKubeRay(ctx context.Context) error {
	if pid := readPid(o.kubeRayPid()); alive(pid) {
		return nil
	}
	return o.retryBindLog(kubeRayComponent, o.kubeRayLog(), func() error {
		probe, err := freePort()
		if err != nil {
			return err
		}
		args := []string{"--kubeconfig", o.Kubeconfig(), "--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe)}
		pid, err := startDetached(o.Binary(kubeRayComponent), args, nil, o.kubeRayLog(), o.kubeRayPid())
		if err != nil {
			return fmt.Errorf("component %s failed to start: %w (log: %s)", kubeRayComponent, err, o.kubeRayLog())
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
			if !alive(pid) {
				return false, errNotRunning
			}
			return httpOK(url) && o.kubeRayControllersStarted(), nil
		})
		if err != nil {
			return fmt.Errorf("component %s not ready (%w); log: %s\n%s", kubeRayComponent, err, o.kubeRayLog(), tail(readFile(o.kubeRayLog()), 15))
		}
		return nil
	})
}

// kubeRayControllersStarted says whether the log shows the workers of both controllers.
func (o Options) kubeRayControllersStarted() bool {
	data, err := os.ReadFile(o.kubeRayLog())
	if err != nil {
		return false
	}
	started := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "Starting workers") && (strings.Contains(line, "controllers.RayJob") || strings.Contains(line, "controllers.RayCluster")) {
			started++
		}
	}
	return started >= 2
}
