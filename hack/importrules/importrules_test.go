package importrules

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/pickyman/pickyman/"

// buildTags are the tag sets the project's tests build with (mk/*.mk): every import of every
// file, tests included, is checked under each.
var buildTags = []string{"", "integration", "e2e", "torch", "realnode", "realnode,torch", "e2e,scale"}

type pkg struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// rule reports why importer may not import imported, or "" when it may.
func rule(importer, imported string) string {
	from, _, _ := strings.Cut(importer, "/")
	to, _, _ := strings.Cut(imported, "/")
	under := func(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
	switch {
	case under(importer, "operator/internal/scheduler") && under(imported, "operator/internal/controller"):
		return "the scheduler writes Allocations and imports none of the reconcilers"
	case under(importer, "operator/internal/allocation") && (under(imported, "operator/internal/controller") || under(imported, "operator/internal/scheduler")):
		return "the Allocation helpers import neither the reconcilers nor the scheduler"
	case under(importer, "operator/pkg") && under(imported, "operator/internal") && !under(imported, "operator/internal/testing"):
		return "the scheduling core (operator/pkg) imports nothing of the operator's internals but its test builders"
	case from == "operator" && (to == "agent" || to == "testbed"):
		return "the operator and the scheduling core import neither the agent nor the testbed"
	case from == "agent" && to == "testbed":
		return "the agent does not import the testbed"
	case from == "api" && to != "api":
		return "api/ imports nothing of the project outside api/"
	case from == "traces" && imported != importer:
		return "traces/ imports nothing of the project"
	}
	return ""
}

func TestRuleTable(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		bad      bool
	}{
		{"operator/internal/controller", "agent/pkg/protocol", true},
		{"operator/pkg/policies/pickyman", "testbed/sim", true},
		{"operator/internal/webhook", "api/agent/v1alpha1", false},
		{"agent/pkg/app", "testbed/agentsim", true},
		{"agent/pkg/app", "api/agent/v1alpha1", false},
		{"api/v1alpha1", "operator/pkg/sched", true},
		{"api/agent/v1alpha1", "api/v1alpha1", false},
		{"traces", "api/v1alpha1", true},
		{"testbed/agentsim", "agent/pkg/app", false},
		{"testbed/sim", "operator/pkg/sched", false},
		{"operator/internal/scheduler", "operator/internal/controller", true},
		{"operator/internal/controller", "operator/internal/scheduler", false},
		{"operator/internal/allocation", "operator/internal/scheduler", true},
		{"operator/pkg/policies/pickyman", "operator/internal/allocation", true},
	} {
		if got := rule(tc.from, tc.to) != ""; got != tc.bad {
			t.Errorf("%s -> %s: forbidden %v, want %v", tc.from, tc.to, got, tc.bad)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestImportRules lists every package of the module with each build tag set and fails on
// every import, of a package or of its tests, that a rule forbids.
func TestImportRules(t *testing.T) {
	root := repoRoot(t)
	seen := 0
	for _, tags := range buildTags {
		cmd := exec.Command("go", "list", "-e", "-tags", tags, "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -tags %q: %v\n%s", tags, err, ee.Stderr)
			}
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for {
			var p pkg
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			importer, ok := strings.CutPrefix(p.ImportPath, module)
			if !ok {
				continue
			}
			seen++
			for _, list := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
				for _, imp := range list {
					imported, ok := strings.CutPrefix(imp, module)
					if !ok {
						continue
					}
					if why := rule(importer, imported); why != "" {
						t.Errorf("%s imports %s (tags %q): %s", importer, imported, tags, why)
					}
				}
			}
		}
	}
	if seen < 50 {
		t.Fatalf("go list found %d packages of the module: is the test run in the repository?", seen)
	}
}

// TestNoTopLevelInternal: shared code lives with the layer that owns it, not in internal/.
func TestNoTopLevelInternal(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repoRoot(t), "internal")); err == nil {
		t.Error("a top-level internal/ exists: move its packages under the layer that uses them")
	}
}
