package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pickyman/pickyman/testbed/cluster"
)

// clusterFlags are the flags shared by the cluster subcommands.
type clusterFlags struct {
	name, home, bin string
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.name, "name", cluster.DefaultName, "cluster name")
	cmd.PersistentFlags().StringVar(&f.home, "home", "", "directory for the clusters' files (default <repo>/.cache/pickyman, or $PICKYMAN_CLUSTER_HOME)")
	cmd.PersistentFlags().StringVar(&f.bin, "bin", "", "directory of the binaries built by make tools (default <repo>/bin, or $PICKYMAN_BIN)")
}

func (f *clusterFlags) options(cmd *cobra.Command) cluster.Options {
	o := cluster.DefaultOptions("")
	o.Name = f.name
	if f.home != "" {
		o.Home = f.home
	}
	if f.bin != "" {
		o.BinDir = f.bin
		o.CRDDir = o.BinDir + "/training-operator-crds"
	}
	o.Log = cmd.ErrOrStderr()
	return o
}

func newClusterCommand() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run the local testbed cluster: a control plane built from Go modules, fake GPU nodes (kwok), the training-operator",
	}
	f.register(cmd)
	cmd.AddCommand(newClusterUpCommand(&f), newClusterDownCommand(&f), newClusterStatusCommand(&f))
	return cmd
}

func newClusterUpCommand(f *clusterFlags) *cobra.Command {
	var (
		nodes, gpus   int
		model, labels string
		taints        string
		pools         []string
		noTrainingOp  bool
		timeout       = cluster.DefaultOptions("").Timeout
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring the cluster up, or repair it (idempotent); prints the kubeconfig path",
		Example: `  pickyman cluster up --nodes 4 --gpus-per-node 8 --gpu-model A100
  pickyman cluster up --pool 4x8:A100 --pool 2x4:V100 --node-labels zone=a`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := f.options(cmd)
			o.Timeout = timeout
			o.TrainingOperator = !noTrainingOp
			lbls, err := cluster.ParseLabels(labels)
			if err != nil {
				return err
			}
			tnts, err := cluster.ParseTaints(taints)
			if err != nil {
				return err
			}
			if len(pools) == 0 {
				pools = []string{fmt.Sprintf("%dx%d:%s", nodes, gpus, model)}
			}
			for _, s := range pools {
				p, err := cluster.ParsePool(s)
				if err != nil {
					return err
				}
				p.Labels, p.Taints = lbls, tnts
				o.Pools = append(o.Pools, p)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			info, err := cluster.Up(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s up in %v (%d nodes created)\n", info.Name, info.Total().Round(1e6), info.NodesCreated)
			fmt.Fprintf(cmd.ErrOrStderr(), "use it with: export KUBECONFIG=%s\n", info.Kubeconfig)
			fmt.Fprintln(cmd.OutOrStdout(), info.Kubeconfig)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&nodes, "nodes", 4, "number of fake GPU nodes (ignored with --pool)")
	fl.IntVar(&gpus, "gpus-per-node", 8, "nvidia.com/gpu per node (ignored with --pool)")
	fl.StringVar(&model, "gpu-model", "A100", fmt.Sprintf("GPU model, one of %v or a product name (ignored with --pool)", cluster.KnownGPUModels()))
	fl.StringArrayVar(&pools, "pool", nil, "a pool of nodes NODESxGPUS:MODEL[:MEMORY_MIB], repeatable: --pool 4x8:A100 --pool 2x4:V100")
	fl.StringVar(&labels, "node-labels", "", "extra labels on every node: k=v,k2=v2")
	fl.StringVar(&taints, "node-taints", "", "taints on every node: key[=value]:Effect,...")
	fl.BoolVar(&noTrainingOp, "no-training-operator", false, "do not install or start the training-operator")
	fl.DurationVar(&timeout, "timeout", timeout, "how long each step may wait")
	return cmd
}

func newClusterDownCommand(f *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every process of the cluster and delete its files; fails if a process or port is left",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := f.options(cmd)
			if err := cluster.Down(cmd.Context(), o); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s down: no process or port left\n", o.Name)
			return nil
		},
	}
}

func newClusterStatusCommand(f *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's processes, ports, nodes and GPUs",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := cluster.GetStatus(cmd.Context(), f.options(cmd))
			if err != nil {
				return err
			}
			s.Print(cmd.OutOrStdout())
			return nil
		},
	}
}
