// Package layout finds the repository and the directory of the built binaries. It has no
// dependencies beyond the standard library, so that tests linking the agent's NVML backend
// can use it: testbed/cluster links kustomize, whose plugin loader imports Go's plugin package,
// and a binary with that package is linked for immediate symbol binding, which fails at start
// on go-nvml's symbols where no NVIDIA library is installed.
package layout

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// modulePath is the product module; RepoRoot looks for its go.mod.
const modulePath = "github.com/pickyman/pickyman"

// RepoRoot returns the directory of the product's go.mod at or above dir.
func RepoRoot(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the pickyman repository")
		}
		dir = parent
	}
}

// BinDir is where `make tools` and `make build` put the binaries: $PICKYMAN_BIN, else bin/ of
// the repository that contains dir (the working directory when empty), else
// $HOME/.pickyman/bin; "" if none can be found.
func BinDir(dir string) string {
	if v := os.Getenv("PICKYMAN_BIN"); v != "" {
		return v
	}
	if root, err := RepoRoot(dir); err == nil {
		return filepath.Join(root, "bin")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".pickyman", "bin")
	}
	return ""
}
