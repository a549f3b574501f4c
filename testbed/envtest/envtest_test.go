package envtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAssetsDirNamesMakeTools(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	_, err := AssetsDir()
	if !errors.Is(err, ErrMissingBinaries) || !strings.Contains(err.Error(), "make tools") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "kube-apiserver")) {
		t.Fatalf("AssetsDir() error = %v, want one naming `make tools` and the missing file", err)
	}
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := AssetsDir()
	if err != nil || got != dir {
		t.Fatalf("AssetsDir() = %q, %v; want %q", got, err, dir)
	}
}
