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
	phase := func(name string, f func() error) error {
		start := time.Now()
		err := f()
		info.Phases = append(info.Phases, PhaseTime{name, time.Since(start)})
		if err == nil {
			o.logf("%-18s %v", name, time.Since(start).Round(time.Millisecond))
		}
		return err
	}
	var c *Clients

	// 1. Binaries: everything runs from bin/; nothing is downloaded.
	if err := phase("binaries", func() error {
		if missing := o.MissingBinaries(); len(missing) > 0 {
			return fmt.Errorf("missing binaries (run `make tools`): %s", strings.Join(missing, ", "))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// 2. Control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
	// kwok controller, as local processes managed by kwokctl.
	if err := phase("control-plane", func() error {
		args, err := o.createArgs()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(o.Home, 0o755); err != nil {
			return err
		}
		if _, err := o.kwokctl(ctx, args...); err != nil {
			return fmt.Errorf("%w\n%s", err, o.diagnose())
		}
		if c, err = NewClients(o.Kubeconfig()); err != nil {
			return err
		}
		if err := c.WaitReady(ctx, o.Timeout); err != nil {
			return fmt.Errorf("component kube-apiserver not ready: %w\n%s", err, o.diagnose())
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// 3. CRDs of the training-operator and of KubeRay, from their module sources.
	if o.TrainingOperator || o.KubeRay {
		if err := phase("crds", func() error {
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
		}); err != nil {
			return nil, err
		}
	}
	// 4. Fake GPU nodes; kwok marks them Ready.
	if err := phase("nodes", func() error {
		nodes := BuildNodes(o.Pools)
		n, err := c.EnsureNodes(ctx, nodes)
		info.NodesCreated = n
		if err != nil {
			return err
		}
		names := make([]string, len(nodes))
		for i, node := range nodes {
			names[i] = node.Name
		}
		if err := c.WaitNodesReady(ctx, names, o.Timeout); err != nil {
			return fmt.Errorf("component kwok-controller: %w\n%s", err, o.diagnose())
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// 4b. Real nodes: a kubelet on containerd with CNI, and kube-proxy (realnode.go).
	if o.RealNodes > 0 {
		if err := phase("real-nodes", func() error { return o.StartRealNodes(ctx, c) }); err != nil {
			return nil, err
		}
	}
	// 5. The training-operator, as a local process.
	if o.TrainingOperator {
		if err := phase("training-operator", func() error {
			if err := prepareTrainingOperator(ctx, c); err != nil {
				return fmt.Errorf("component training-operator: %w", err)
			}
			_, err := o.startTrainingOperator(ctx)
			return err
		}); err != nil {
			return nil, err
		}
	}
	// 5b. KubeRay's controllers, as a local process.
	if o.KubeRay {
		if err := phase("kuberay", func() error { return o.startKubeRay(ctx) }); err != nil {
			return nil, err
		}
	}
	// 6. PickyMan's operator and agent, as local processes under their ServiceAccounts.
	if o.PickyMan != nil {
		if err := phase("pickyman", func() error { return o.DeployPickyMan(ctx, c) }); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// Total is the time Up took.
func (i *Info) Total() time.Duration {
	var t time.Duration
	for _, p := range i.Phases {
		t += p.Took
	}
	return t
}
