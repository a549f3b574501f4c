package cluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pickyman/pickyman/testbed/cluster/layout"
)

// DefaultName is the name of the testbed cluster when none is given.
const DefaultName = "pickyman"

// Options says where the testbed's files are and what cluster to run.
type Options struct {
	// Name of the cluster; several can run side by side.
	Name string
	// Home holds kwokctl's work directory; the cluster's files are in Home/clusters/<Name>.
	Home string
	// BinDir holds the binaries that `make tools` builds.
	BinDir string
	// StagesDir holds the kwok Stage files (config/kwok).
	StagesDir string
	// CRDDir holds the training-operator's CRDs (copied from its module by `make tools`).
	CRDDir string
	// ConfigDir is the repository's config/ (kustomize sources of PickyMan's manifests).
	ConfigDir string
	// PickyMan, when set, deploys PickyMan's operator and agent (testbed mode) on the cluster.
	PickyMan *PickyMan
	// Pools are the fake GPU nodes to create.
	Pools []Pool
	// RealNodes is the number of real nodes (a kubelet on containerd, CNI, kube-proxy: see
	// realnode.go) to run beside the fake ones; 0 runs none. The cluster must be created
	// with it: it sets API server flags.
	RealNodes int
	// TrainingOperator starts the training-operator (default true from DefaultOptions).
	TrainingOperator bool
	// Trainer installs the CRDs of JobSet and the Kubeflow Trainer v2 and starts both
	// controllers with their webhooks and a PyTorch ClusterTrainingRuntime (default true from
	// DefaultOptions; trainer.go).
	Trainer bool
	// JobSetCRDDir and TrainerCRDDir hold their CRDs (copied from their modules by `make
	// tools`).
	JobSetCRDDir, TrainerCRDDir string
	// KubeRay installs KubeRay's CRDs and starts its RayCluster and RayJob controllers with
	// the testbed dashboard (default true from DefaultOptions; kuberay.go).
	KubeRay bool
	// KubeRayCRDDir holds KubeRay's CRDs (copied from its module by `make tools`).
	KubeRayCRDDir string
	// Kueue installs Kueue's CRDs and webhooks and starts its controller manager (kueue.go;
	// off by default: pickyman cluster up --kueue, pickyman replay --scheduler kueue).
	Kueue bool
	// KueueDir holds Kueue's CRDs and webhook manifests (copied from its module by `make
	// tools`).
	KueueDir string
	// Storage, when set, starts the dataset store (storage.go) with its datasets.
	Storage *Storage
	// Timeout bounds each wait in Up.
	Timeout time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// DefaultOptions returns the options for the repository that contains dir (the working
// directory when empty): bin/, config/kwok, .cache/pickyman. PICKYMAN_CLUSTER_HOME and
// PICKYMAN_BIN override the home and the binaries directory. Outside the repository the home
// is $HOME/.pickyman.
func DefaultOptions(dir string) Options {
	o := Options{Name: DefaultName, TrainingOperator: true, KubeRay: true, Trainer: true, Timeout: 2 * time.Minute}
	root, err := RepoRoot(dir)
	if err == nil {
		o.Home = filepath.Join(root, ".cache", "pickyman")
		o.StagesDir = filepath.Join(root, "config", "kwok")
		o.ConfigDir = filepath.Join(root, "config")
	} else if home, herr := os.UserHomeDir(); herr == nil {
		o.Home = filepath.Join(home, ".pickyman")
	}
	o.BinDir = layout.BinDir(dir)
	if v := os.Getenv("PICKYMAN_CLUSTER_HOME"); v != "" {
		o.Home = v
	}
	o.CRDDir = filepath.Join(o.BinDir, "training-operator-crds")
	o.KubeRayCRDDir = filepath.Join(o.BinDir, "kuberay-crds")
	o.JobSetCRDDir = filepath.Join(o.BinDir, "jobset-crds")
	o.TrainerCRDDir = filepath.Join(o.BinDir, "trainer-crds")
	o.KueueDir = filepath.Join(o.BinDir, "kueue")
	return o
}

// RepoRoot returns the directory of the product's go.mod at or above dir (the working
// directory when empty).
func RepoRoot(dir string) (string, error) { return layout.RepoRoot(dir) }

// Workdir is the cluster's directory: kwokctl's files, the kubeconfig, the logs.
func (o Options) Workdir() string { return filepath.Join(o.Home, "clusters", o.Name) }

// Kubeconfig is the path of the cluster's kubeconfig.
func (o Options) Kubeconfig() string { return filepath.Join(o.Workdir(), "kubeconfig.yaml") }

// Binary is the path of a tool binary.
func (o Options) Binary(name string) string { return filepath.Join(o.BinDir, name) }

// ControlPlaneBinaries are the binaries kwokctl runs, by its flag name.
var ControlPlaneBinaries = []struct{ Flag, Name string }{
	{"--etcd-binary", "etcd"},
	{"--kube-apiserver-binary", "kube-apiserver"},
	{"--kube-controller-manager-binary", "kube-controller-manager"},
	{"--kube-scheduler-binary", "kube-scheduler"},
	{"--kwok-controller-binary", "kwok"},
}

// MissingBinaries lists the binaries Up needs that are not in BinDir.
func (o Options) MissingBinaries() []string {
	names := []string{"kwokctl"}
	for _, b := range ControlPlaneBinaries {
		names = append(names, b.Name)
	}
	if o.TrainingOperator {
		names = append(names, "training-operator")
	}
	if o.KubeRay {
		names = append(names, kubeRayComponent)
	}
	if o.Trainer {
		names = append(names, JobSetComponent, TrainerComponent)
	}
	if o.Kueue {
		names = append(names, KueueComponent)
	}
	if o.Storage != nil {
		names = append(names, "pickyman") // `pickyman storage serve`: make build-pickyman
	}
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(o.Binary(n)); err != nil {
			missing = append(missing, o.Binary(n))
		}
	}
	return missing
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}
