package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	"github.com/pickyman/pickyman/agent/pkg/metrics"
	"github.com/pickyman/pickyman/agent/pkg/traffic"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// Options are the agent's flags.
type Options struct {
	Node        string
	SocketDir   string
	ProcRoot    string
	Backend     string // nvml or fake
	Fake        gpu.FakeConfig
	MetricsAddr string
	Resync      time.Duration
	// LabelNode is when the agent publishes GPU feature-discovery labels on its node:
	// LabelAuto, LabelAlways or LabelNever.
	LabelNode string
	// DCGMMetrics exports the GPU gauges under dcgm-exporter's names (metrics.Collector).
	DCGMMetrics bool
	// ProgressWrites and ProgressBurst bound the progress patches (coord.Coordinator).
	ProgressWrites float64
	ProgressBurst  int

	// PrepareSocketDir, when >= 0, makes the socket directory owned by this uid and exits
	// (the DaemonSet's init container, the only step that runs as root).
	PrepareSocketDir int
}

// Flags registers the options on fs.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Node, "node", os.Getenv("NODE_NAME"), "the node this agent serves (default $NODE_NAME)")
	fs.StringVar(&o.SocketDir, "socket-dir", agentv1alpha1.DefaultSocketDir, "directory of the local API socket, shared with training pods")
	fs.StringVar(&o.ProcRoot, "proc", "/proc", "the host's /proc (the agent runs in the host PID namespace)")
	fs.StringVar(&o.Backend, "gpu-backend", "nvml", "GPU backend: nvml (libnvidia-ml) or fake")
	fs.StringVar(&o.Fake.Product, "fake-gpu-product", "NVIDIA A100-SXM4-80GB", "fake backend: GPU product name")
	fs.IntVar(&o.Fake.Count, "fake-gpu-count", 8, "fake backend: number of GPUs")
	fs.Uint64Var(&o.Fake.MemoryMiB, "fake-gpu-memory-mib", 81920, "fake backend: memory of one GPU in MiB")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":9400", "address of the Prometheus metrics endpoint (\"0\" disables it)")
	fs.DurationVar(&o.Resync, "resync", 2*time.Second, "period of the registry sync from the pod informer (no API request) and of the progress refresh")
	fs.StringVar(&o.LabelNode, "label-node", LabelAuto, "publish the GPU feature-discovery labels (nvidia.com/gpu.product, .count, .memory) on the node: auto (unless NVIDIA's GPU feature discovery labels it), true or false")
	fs.BoolVar(&o.DCGMMetrics, "dcgm-metrics", false, "export the GPU gauges under dcgm-exporter's names (DCGM_FI_DEV_*) instead of pickyman_agent_gpu_* (for a cluster without dcgm-exporter)")
	fs.Float64Var(&o.ProgressWrites, "progress-writes", DefaultProgressWrites, "most progress patches a second over all the node's pods (0: unbounded); held-back progress is written later with its newest value, acknowledgements are never held back")
	fs.IntVar(&o.ProgressBurst, "progress-burst", DefaultProgressBurst, "progress patches that may go at once above --progress-writes")
	fs.IntVar(&o.PrepareSocketDir, "prepare-socket-dir", -1, "create the socket directory, give it to this uid, and exit")
}

// Defaults of --progress-writes and --progress-burst: eight training pods refreshing their
// progress every agentv1alpha1.ProgressInterval write at this rate unthrottled, and an agent
// stays under one API request a second at steady state whatever its pods and epochs.
const (
	DefaultProgressWrites = 0.8
	DefaultProgressBurst  = 8
)

// Main parses args and runs the agent until SIGINT or SIGTERM.
func Main(args []string) int {
	var o Options
	return Command("pickyman-agent", args, o.Flags, func(ctx context.Context, log logr.Logger) error {
		if o.PrepareSocketDir >= 0 {
			if err := PrepareSocketDir(o.SocketDir, o.PrepareSocketDir); err != nil {
				return fmt.Errorf("prepare socket directory: %w", err)
			}
			return nil
		}
		return Run(ctx, o, log)
	})
}

// Command parses args into the flags that addFlags registers, with klog's text logger
// flags, and calls run until SIGINT or SIGTERM. It returns the process's exit code: 2 for
// bad flags, 1 when run fails (the error is logged), else 0.
func Command(name string, args []string, addFlags func(*flag.FlagSet), run func(context.Context, logr.Logger) error) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	addFlags(fs)
	lc := textlogger.NewConfig()
	lc.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := textlogger.NewLogger(lc)
	ctrl.SetLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error(err, name+" failed")
		return 1
	}
	return 0
}

// PrepareSocketDir creates dir (0755) and gives it to uid. It runs as root with CAP_CHOWN
// alone (the DaemonSet's init container): without CAP_FOWNER root may change the mode only
// of a directory it owns, so the mode is set first, and only when it differs, and the owner
// last.
func PrepareSocketDir(dir string, uid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o755 {
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
	}
	return os.Chown(dir, uid, uid)
}

func NewClient() (client.WithWatch, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// Run runs the agent with options o.
func Run(ctx context.Context, o Options, log logr.Logger) error {
	kube, err := NewClient()
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if o.Node == "" {
		return errors.New("--node (or $NODE_NAME) is required")
	}
	if o.LabelNode != LabelAuto && o.LabelNode != LabelAlways && o.LabelNode != LabelNever {
		return fmt.Errorf("--label-node %q: want auto, true or false", o.LabelNode)
	}
	if !(o.ProgressWrites >= 0) || o.ProgressBurst < 1 {
		return fmt.Errorf("--progress-writes %g, --progress-burst %d: want a rate of 0 or more and a burst of 1 or more", o.ProgressWrites, o.ProgressBurst)
	}
	backend, err := openBackend(o)
	if err != nil {
		return err
	}
	defer backend.Close()

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	co := &coord.Coordinator{Node: o.Node, Clock: clock.RealClock{}, Log: log.WithName("coord"), Resync: o.Resync,
		Counter:        func(pid int) (int64, error) { return traffic.ReadNetDev(o.ProcRoot, pid) },
		ProgressWrites: o.ProgressWrites, ProgressBurst: o.ProgressBurst}
	reg := api.NewRegistry(clock.RealClock{}, co)
	co.Registry = reg
	// The node's pods come from one informer (a watch); the registry is set before the
	// informer's first events can trigger the coordinator.
	podClient, err := NewNodeClient(ctx, cfg, o.Node, co.Trigger)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	co.Client = podClient
	col := metrics.New(func() map[string]gpu.Backend { return map[string]gpu.Backend{o.Node: backend} }, reg)
	col.DCGMNames = o.DCGMMetrics
	co.OnAck = col.Acked

	if err := os.MkdirAll(o.SocketDir, 0o755); err != nil {
		return err
	}
	l, err := api.Listen(filepath.Join(o.SocketDir, agentv1alpha1.SocketName))
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	srv := &api.Server{Registry: reg, Resolver: api.CgroupResolver{Root: o.ProcRoot}, Errors: col.APIError}

	errc := make(chan error, 4)
	go func() { errc <- srv.Serve(ctx, l) }()
	go func() { errc <- co.Run(ctx) }()
	go func() { errc <- ServeMetrics(ctx, o.MetricsAddr, col) }()
	if o.LabelNode != LabelNever {
		go func() { errc <- labelNode(ctx, kube, o.Node, o.LabelNode, backend, log) }()
	}
	log.Info("agent running", "node", o.Node, "socket", l.Addr().String(), "backend", o.Backend)
	return Wait(ctx, errc)
}

func openBackend(o Options) (gpu.Backend, error) {
	switch o.Backend {
	case "nvml":
		return gpu.OpenNVML()
	case "fake":
		o.Fake.Node = o.Node
		return gpu.NewFake(o.Fake)
	}
	return nil, fmt.Errorf("unknown --gpu-backend %q (nvml or fake)", o.Backend)
}

// Values of --label-node.
const (
	// LabelAuto publishes the GPU labels unless NVIDIA's GPU feature discovery (GFD, part
	// of the GPU Operator) labels the node: it owns the same nvidia.com/gpu.* keys, and two
	// writers would fight over them.
	LabelAuto   = "auto"
	LabelAlways = "true"
	LabelNever  = "false"
)

// LabelGFDTimestamp is the label GPU feature discovery writes on every node it labels; its
// presence says GFD runs there.
const LabelGFDTimestamp = "nvidia.com/gfd.timestamp"

// labelNode publishes the GPU labels now and every ten minutes (the GPUs rarely change, but
// the labels may have been removed), in mode LabelAuto only while GFD does not label the
// node.
func labelNode(ctx context.Context, kube client.Client, node, mode string, b gpu.Backend, log logr.Logger) error {
	gfd := false
	for {
		published, err := PublishLabels(ctx, kube, node, mode, b)
		if err != nil && ctx.Err() == nil {
			log.Error(err, "publish GPU labels")
		}
		skipped := !published && err == nil
		if skipped && !gfd {
			log.Info("GPU feature discovery labels this node; not publishing GPU labels (--label-node=true to publish anyway)", "node", node)
		}
		gfd = skipped
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Minute):
		}
	}
}

// PublishLabels sets the GPU labels of b's devices on node and reports whether it did: in
// mode LabelAuto not on a node that GPU feature discovery labels (LabelGFDTimestamp).
func PublishLabels(ctx context.Context, kube client.Client, node, mode string, b gpu.Backend) (bool, error) {
	if mode == LabelAuto {
		n := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, fmt.Errorf("read node %s: %w", node, err)
		}
		if _, ok := n.Labels[LabelGFDTimestamp]; ok {
			return false, nil
		}
	}
	devs, err := b.Devices()
	if err != nil {
		return false, err
	}
	return true, coord.PublishGPULabels(ctx, kube, node, devs)
}

func ServeMetrics(ctx context.Context, addr string, col prometheus.Collector) error {
	if addr == "" || addr == "0" {
		<-ctx.Done()
		return nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Wait returns the first error of a component, or nil when ctx ends.
func Wait(ctx context.Context, errc <-chan error) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		if err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
}
