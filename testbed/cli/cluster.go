package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/storage"
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
	cmd.AddCommand(newClusterUpCommand(&f), newClusterDownCommand(&f), newClusterStatusCommand(&f), newClusterNodesCommand())
	return cmd
}

// poolFlags are the flags that describe fake GPU nodes.
type poolFlags struct {
	nodes, gpus   int
	model, labels string
	taints        string
	pools         []string
}

func (p *poolFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&p.nodes, "nodes", 4, "number of fake GPU nodes (ignored with --pool)")
	fl.IntVar(&p.gpus, "gpus-per-node", 8, "nvidia.com/gpu per node (ignored with --pool)")
	fl.StringVar(&p.model, "gpu-model", "A100", "GPU model, one of "+strings.Join(cluster.KnownGPUModels(), ", ")+" (another GPU: --pool NODESxGPUS:PRODUCT:MEMORY_MIB; ignored with --pool)")
	fl.StringArrayVar(&p.pools, "pool", nil, "a pool of nodes NODESxGPUS:MODEL[:MEMORY_MIB], repeatable: --pool 4x8:A100 --pool 2x4:V100; MODEL is one of the --gpu-model names, or any product name with its memory (MiB per GPU)")
	fl.StringVar(&p.labels, "node-labels", "", "extra labels on every node: k=v,k2=v2")
	fl.StringVar(&p.taints, "node-taints", "", "taints on every node: key[=value]:Effect,...")
}

func (p *poolFlags) build() ([]cluster.Pool, error) {
	lbls, err := cluster.ParseLabels(p.labels)
	if err != nil {
		return nil, err
	}
	tnts, err := cluster.ParseTaints(p.taints)
	if err != nil {
		return nil, err
	}
	specs := p.pools
	if len(specs) == 0 {
		specs = []string{fmt.Sprintf("%dx%d:%s", p.nodes, p.gpus, p.model)}
	}
	var out []cluster.Pool
	for _, s := range specs {
		pool, err := cluster.ParsePool(s)
		if err != nil {
			return nil, err
		}
		pool.Labels, pool.Taints = lbls, tnts
		out = append(out, pool)
	}
	return out, nil
}

func newClusterUpCommand(f *clusterFlags) *cobra.Command {
	var (
		pf           poolFlags
		noTrainingOp bool
		noKubeRay    bool
		noTrainer    bool
		kueue        bool
		timeout      = cluster.DefaultOptions("").Timeout
		pickyman     bool
		operatorConf string
		timeScale    float64
		seed         int64
		realNodes    int
		processes    bool
		withStorage  bool
		datasets     []string
		storageRate  string
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring the cluster up, or repair it (idempotent); prints the kubeconfig path",
		Example: `  pickyman cluster up --nodes 4 --gpus-per-node 8 --gpu-model A100
  pickyman cluster up --pool 4x8:A100 --pool 2x4:V100 --node-labels zone=a
  pickyman cluster up --pickyman --operator-config config/manager/operator-config.yaml --time-scale 60
  pickyman cluster up --pickyman --pickyman-processes   # development: local processes, no real node
  pickyman cluster up --kueue                           # with Kueue's controller manager
  pickyman cluster up --real-nodes 1 --dataset imagenet-mini=256Mi@8Mi   # a dataset store for the real node's pods`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := f.options(cmd)
			o.Timeout = timeout
			o.TrainingOperator = !noTrainingOp
			o.KubeRay = !noKubeRay
			o.Trainer = !noTrainer
			o.Kueue = kueue
			pools, err := pf.build()
			if err != nil {
				return err
			}
			o.Pools = pools
			if withStorage || len(datasets) > 0 || cmd.Flags().Changed("storage-rate") {
				st := &cluster.Storage{}
				for _, spec := range datasets {
					d, err := storage.ParseDataset(spec)
					if err != nil {
						return fmt.Errorf("--dataset: %w", err)
					}
					st.Datasets = append(st.Datasets, d)
				}
				if st.Rate, err = storage.ParseRate(storageRate); err != nil {
					return fmt.Errorf("--storage-rate: %w", err)
				}
				o.Storage = st
			}
			o.RealNodes = realNodes
			if pickyman && !processes && !cmd.Flags().Changed("real-nodes") {
				// Installed PickyMan runs on a real node.
				o.RealNodes = 1
			}
			if pickyman {
				conf := &configv1.Configuration{}
				if operatorConf != "" {
					if conf, err = configv1.Load(operatorConf, policies.Validate); err != nil {
						return err
					}
				}
				o.PickyMan = &cluster.PickyMan{Config: conf, TimeScale: timeScale, Seed: seed, Installed: !processes}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			info, err := cluster.Up(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s up in %v (%d nodes created)\n", info.Name, info.Total().Round(time.Millisecond), info.NodesCreated)
			fmt.Fprintf(cmd.ErrOrStderr(), "use it with: export KUBECONFIG=%s\n", info.Kubeconfig)
			if o.Storage != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "datasets at http://%s/ (files in %s)\n", o.StorageAddr(), o.StorageDir())
			}
			fmt.Fprintln(cmd.OutOrStdout(), info.Kubeconfig)
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().BoolVar(&noTrainingOp, "no-training-operator", false, "do not install or start the training-operator")
	cmd.Flags().BoolVar(&kueue, "kueue", false, "also install Kueue's CRDs and webhooks and start its controller manager (v0.17.0, PyTorchJob integration; needs `make tools`)")
	cmd.Flags().BoolVar(&noKubeRay, "no-kuberay", false, "do not install KubeRay's CRDs or start its RayCluster and RayJob controllers")
	cmd.Flags().BoolVar(&noTrainer, "no-trainer", false, "do not install the CRDs of JobSet and the Kubeflow Trainer or start their controllers")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long each step may wait")
	cmd.Flags().BoolVar(&pickyman, "pickyman", false, "also install PickyMan (its installer with the testbed overlay: the operator and the testbed agent as pods on a real node, from `make images`)")
	cmd.Flags().BoolVar(&processes, "pickyman-processes", false, "with --pickyman: run the operator and agent as local processes under their ServiceAccounts instead (needs `make build`; development)")
	cmd.Flags().StringVar(&operatorConf, "operator-config", "", "with --pickyman: the operator's configuration file (defaults if empty; the testbed sets its addresses)")
	cmd.Flags().Float64Var(&timeScale, "time-scale", 1, "with --pickyman: the agent's trace seconds per real second")
	cmd.Flags().Int64Var(&seed, "seed", 1, "with --pickyman: seed of the agent's per-job noise")
	cmd.Flags().BoolVar(&withStorage, "storage", false, "also start the dataset store: an HTTP object server of generated datasets on node 0's bridge, for the real nodes' pods (on 127.0.0.1 without real nodes; needs `make build-pickyman`)")
	cmd.Flags().StringArrayVar(&datasets, "dataset", nil, "a dataset for the store to generate if missing, NAME=SIZE[@RATE] (quantities: 40Mi, 1Gi; RATE in bytes per second), repeatable; implies --storage")
	cmd.Flags().StringVar(&storageRate, "storage-rate", "0", "the store's pace of each response in bytes per second, a quantity such as 8Mi, for objects without a rate of their own (0: unpaced); implies --storage")
	cmd.Flags().IntVar(&realNodes, "real-nodes", 0, "also run this many real nodes <name>-node-<i>: a kubelet on containerd with CNI, and kube-proxy (root; `make realnode-deps realnode-tools`; only when the cluster is created)")
	return cmd
}

func newClusterNodesCommand() *cobra.Command {
	var (
		pf         poolFlags
		kubeconfig string
	)
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Create fake GPU nodes on any cluster that runs kwok (kind, for example)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			pools, err := pf.build()
			if err != nil {
				return err
			}
			c, err := cluster.NewClients(kubeconfig)
			if err != nil {
				return err
			}
			nodes := cluster.BuildNodes(pools)
			n, err := c.EnsureNodes(cmd.Context(), nodes)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d nodes created, %d already there\n", n, len(nodes)-n)
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "cluster to create the nodes in")
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
	var (
		sample time.Duration
		out    outputFlag
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's processes, ports, nodes and GPUs; with --sample, their CPU and memory",
		Long: "Show the cluster's processes, ports, nodes and GPUs; with --sample, their CPU and memory.\n" +
			"-o json prints the same as one JSON object.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			o := f.options(cmd)
			s, err := cluster.GetStatus(cmd.Context(), o)
			if err != nil {
				return err
			}
			if !out.json() {
				s.Print(cmd.OutOrStdout())
			}
			var us []cluster.Usage
			if sample > 0 && s.Exists {
				fmt.Fprintf(cmd.ErrOrStderr(), "sampling /proc for %v\n", sample)
				if us, err = cluster.SampleUsage(cmd.Context(), o.ClusterPids(), sample, time.Second); err != nil {
					return err
				}
			}
			if out.json() {
				return writeJSON(cmd.OutOrStdout(), newClusterStatusJSON(s, us))
			}
			if us != nil {
				cluster.PrintUsage(cmd.OutOrStdout(), us)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&sample, "sample", 0, "measure each process's CPU (cores) and RSS over this long, e.g. 1m")
	out.register(cmd)
	return cmd
}

// clusterStatusJSON is `pickyman cluster status -o json`.
type clusterStatusJSON struct {
	Name       string `json:"name"`
	Exists     bool   `json:"exists"`
	Kubeconfig string `json:"kubeconfig"`
	APIReady   bool   `json:"api_ready"`
	// Processes are the cluster's processes by component.
	Processes  map[string]processJSON `json:"processes"`
	Nodes      int                    `json:"nodes"`
	ReadyNodes int                    `json:"ready_nodes"`
	GPUs       int64                  `json:"gpus"`
	// GPUsByProduct counts allocatable GPUs per nvidia.com/gpu.product ("" for nodes without
	// the label).
	GPUsByProduct map[string]int64 `json:"gpus_by_product"`
	// StorageURL is the dataset store's URL when it runs.
	StorageURL string `json:"storage_url,omitempty"`
	// Usage is there with --sample.
	Usage []usageJSON `json:"usage,omitempty"`
}

type processJSON struct {
	Pid     int   `json:"pid"`
	Running bool  `json:"running"`
	Ports   []int `json:"ports"`
}

type usageJSON struct {
	Component string  `json:"component"`
	Pid       int     `json:"pid"`
	Cores     float64 `json:"cores"`
	RSSMiB    float64 `json:"rss_mib"`
	MaxRSSMiB float64 `json:"max_rss_mib"`
	// CPUWait is the average number of the process's threads waiting for a core.
	CPUWait float64 `json:"cpu_wait"`
}

func newClusterStatusJSON(s *cluster.Status, us []cluster.Usage) clusterStatusJSON {
	j := clusterStatusJSON{Name: s.Name, Exists: s.Exists, Kubeconfig: s.Kubeconfig, APIReady: s.APIReady,
		Processes: map[string]processJSON{}, Nodes: s.Nodes, ReadyNodes: s.ReadyNode, GPUs: s.GPUs,
		GPUsByProduct: map[string]int64{}, StorageURL: s.StorageURL}
	for name, p := range s.Processes {
		ports := p.Ports
		if ports == nil {
			ports = []int{}
		}
		j.Processes[name] = processJSON{Pid: p.Pid, Running: p.Alive, Ports: ports}
	}
	for product, n := range s.GPUsByProduct {
		j.GPUsByProduct[product] = n
	}
	for _, u := range us {
		j.Usage = append(j.Usage, usageJSON{Component: u.Component, Pid: u.Pid, Cores: u.CPU, RSSMiB: u.RSSMiB, MaxRSSMiB: u.MaxRSSMiB, CPUWait: u.Wait})
	}
	return j
}
