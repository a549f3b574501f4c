package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// Info describes a running testbed cluster.
type Info struct {
	Name       string
	Kubeconfig string
	Workdir    string
	// Nodes created by this Up (existing ones are left alone).
	NodesCreated int
	// Phase durations of this Up, in order.
	Phases []PhaseTime
}

// PhaseTime is how long one phase of Up took.
type PhaseTime struct {
	Phase string
	Took  time.Duration
}

// Up brings the cluster up, or repairs a cluster that is partly up. Every phase is
// idempotent. An error names the component that failed and where its log is.
func Up(ctx context.Context, o Options) (*Info, error) {
	info := &Info{Name: o.Name, Kubeconfig: o.Kubeconfig(), Workdir: o.Workdir()}
	var c *Clients
	steps := []struct {
		name string
		when bool
		run  func() error
	}{
		// 1. Binaries: everything runs from bin/; nothing is downloaded.
		{"binaries", true, o.checkBinaries},
		// 2. Control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
		// the kwok controller, as local processes managed by kwokctl.
		{"control-plane", true, func() (err error) { c, err = o.upControlPlane(ctx); return err }},
		// 3. CRDs of the training-operator and of KubeRay, from their module sources.
		{"crds", o.TrainingOperator || o.KubeRay, func() error { return o.applyCRDs(ctx, c) }},
		// 4. Fake GPU nodes; kwok marks them Ready.
		{"nodes", true, func() (err error) { info.NodesCreated, err = o.upNodes(ctx, c); return err }},
		// 4b. Real nodes: a kubelet on containerd with CNI, and kube-proxy (realnode.go).
		{"real-nodes", o.RealNodes > 0, func() error { return o.StartRealNodes(ctx, c) }},
		// 4c. The dataset store, as a local process on node 0's bridge (storage.go).
		{"storage", o.Storage != nil, func() error { return o.startStorage(ctx) }},
		// 5. The training-operator, as a local process.
		{"training-operator", o.TrainingOperator, func() error {
			if err := prepareTrainingOperator(ctx, c); err != nil {
				return fmt.Errorf("component training-operator: %w", err)
			}
			_, err := o.startTrainingOperator(ctx)
			return err
		}},
		// 5b. KubeRay's controllers, as a local process.
		{"kuberay", o.KubeRay, func() error { return o.startKubeRay(ctx) }},
		// 5c. Kueue's controller manager with its CRDs and webhooks, as a local process.
		{"kueue", o.Kueue, func() error { return o.startKueue(ctx, c) }},
		// 5d. JobSet's and the Trainer's controllers with their CRDs and webhooks, and the
		// PyTorch ClusterTrainingRuntime (trainer.go).
		{"trainer", o.Trainer, func() error { return o.startTrainer(ctx, c) }},
		// 6. PickyMan: installed from its installer, or its operator and agent as local
		// processes (DeployPickyMan).
		{"pickyman", o.PickyMan != nil, func() error { return o.DeployPickyMan(ctx, c) }},
	}
	for _, st := range steps {
		if !st.when {
			continue
		}
		start := time.Now()
		err := st.run()
		info.Phases = append(info.Phases, PhaseTime{st.name, time.Since(start)})
		if err != nil {
			return nil, err
		}
		o.logf("%-18s %v", st.name, time.Since(start).Round(time.Millisecond))
	}
	return info, nil
}

func (o Options) checkBinaries() error {
	if missing := o.MissingBinaries(); len(missing) > 0 {
		return fmt.Errorf("missing binaries (run `make tools`; bin/pickyman: `make build-pickyman`): %s", strings.Join(missing, ", "))
	}
	return nil
}

func (o Options) upControlPlane(ctx context.Context) (*Clients, error) {
	args, err := o.createArgs()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Home, 0o755); err != nil {
		return nil, err
	}
	if _, err := o.kwokctl(ctx, args...); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, o.diagnose())
	}
	c, err := NewClients(o.Kubeconfig())
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx, o.Timeout); err != nil {
		return nil, fmt.Errorf("component kube-apiserver not ready: %w\n%s", err, o.diagnose())
	}
	return c, nil
}

func (o Options) applyCRDs(ctx context.Context, c *Clients) error {
	if o.TrainingOperator {
		if _, err := c.ApplyCRDs(ctx, o.CRDDir, o.Timeout); err != nil {
			return err
		}
	}
	if o.KubeRay {
		if _, err := c.ApplyCRDs(ctx, o.KubeRayCRDDir, o.Timeout); err != nil {
			return err
		}
	}
	return nil
}

// upNodes creates the fake GPU nodes that are missing and waits until kwok marks them Ready;
// it returns how many it created.
func (o Options) upNodes(ctx context.Context, c *Clients) (int, error) {
	nodes := BuildNodes(o.Pools)
	n, err := c.EnsureNodes(ctx, nodes)
	if err != nil {
		return n, err
	}
	names := make([]string, len(nodes))
	for i, node := range nodes {
		names[i] = node.Name
	}
	if err := c.WaitNodesReady(ctx, names, o.Timeout); err != nil {
		return n, fmt.Errorf("component kwok-controller: %w\n%s", err, o.diagnose())
	}
	return n, nil
}

// Total is the time Up took.
func (i *Info) Total() time.Duration {
	var t time.Duration
	for _, p := range i.Phases {
		t += p.Took
	}
	return t
}
