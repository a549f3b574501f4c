package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pickyman/pickyman/testbed/cluster/layout"
)

// Binaries are the files envtest runs.
var Binaries = []string{"kube-apiserver", "etcd"}

// ErrMissingBinaries says the control-plane binaries are not built.
var ErrMissingBinaries = errors.New("control-plane binaries missing: run `make tools`")

// AssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when
// set, else the repository's bin/ (or PICKYMAN_BIN). It fails with ErrMissingBinaries naming
// the files it did not find.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = layout.BinDir("")
	}
	if dir == "" {
		return "", fmt.Errorf("%w (no repository or home directory to find bin/ in)", ErrMissingBinaries)
	}
	var missing []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, filepath.Join(dir, b))
		}
	}
	if len(missing) > 0 {
		return dir, fmt.Errorf("%w; not found: %s", ErrMissingBinaries, strings.Join(missing, ", "))
	}
	return dir, nil
}

// TrainingOperatorCRDs is the directory of the training-operator's CRDs that `make tools`
// copies from its module; pass it to New to serve PyTorchJobs.
func TrainingOperatorCRDs() string { return filepath.Join(layout.BinDir(""), "training-operator-crds") }

// New returns an environment that runs the built binaries and installs the CRDs found in
// crdDirs (each must exist).
func New(crdDirs ...string) (*envtest.Environment, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: len(crdDirs) > 0,
	}, nil
}

// Start starts an environment for one test and stops it when the test ends. Missing binaries
// fail the test under CI and skip it elsewhere.
func Start(tb testing.TB, crdDirs ...string) *rest.Config {
	tb.Helper()
	env, err := New(crdDirs...)
	if err != nil {
		if errors.Is(err, ErrMissingBinaries) && os.Getenv("CI") == "" {
			tb.Skip(err.Error())
		}
		tb.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		tb.Fatalf("start kube-apiserver and etcd from %s: %v", env.BinaryAssetsDirectory, err)
	}
	tb.Cleanup(func() {
		if err := env.Stop(); err != nil {
			tb.Errorf("stop envtest: %v", err)
		}
	})
	return cfg
}
