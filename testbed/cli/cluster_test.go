package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterStatusJSON(t *testing.T) {
	home := t.TempDir()
	out, _, err := runCLI(t, "cluster", "status", "--home", home, "--name", "c1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got clusterStatusJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Name != "c1" || got.Exists || got.APIReady || !strings.HasPrefix(got.Kubeconfig, home) {
		t.Errorf("status of a cluster never created = %+v", got)
	}
	out, _, err = runCLI(t, "cluster", "status", "--home", home, "--name", "c1")
	if err != nil || out != "cluster c1: not created\n" {
		t.Errorf("text status = %q, %v", out, err)
	}
}

// TestClusterUpUnknownModel: an unknown GPU model is refused before anything starts, with
// the known models.
func TestClusterUpUnknownModel(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"cluster", "up", "--home", home, "--pool", "4x8:A10O"},
		{"cluster", "up", "--home", home, "--gpu-model", "A10O"},
		{"cluster", "nodes", "--pool", "4x8:A10O"},
	} {
		_, _, err := runCLI(t, args...)
		want := `unknown GPU model "A10O" (known: A10, A100, A100-40GB, A40, H100, L4, P100, T4, V100;`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error = %v, want it to contain %q", args, err, want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(home, "*", "*")); len(m) > 0 {
		t.Errorf("cluster up with a bad pool left files: %v", m)
	}
}
