package gpu

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoPluginPackageWithNVML: a binary that contains Go's plugin package is linked for
// immediate symbol binding, and one that also links go-nvml then fails at start with
// "undefined symbol: nvml..." wherever libnvidia-ml is not installed (go-nvml resolves its
// symbols lazily, after it has loaded the library). No agent binary or agent test may link
// plugin, nor may the testbed agent, which links the agent's packages; kustomize's plugin
// loader brings it in (testbed/cluster, config/installer).
func TestNoPluginPackageWithNVML(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "-tags", "integration,torch",
		"github.com/pickyman/pickyman/agent/...", "github.com/pickyman/pickyman/testbed/agentsim/...",
		"github.com/pickyman/pickyman/testbed/cmd/pickyman-testbed-agent").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "plugin" {
			t.Fatalf("an agent package or test links Go's plugin package; find it with: go list -deps -test -tags integration,torch -f '{{.ImportPath}} {{.Imports}}' ./agent/... | grep -w plugin")
		}
	}
}
