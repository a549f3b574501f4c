package cli

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/pickyman/pickyman", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "GOOS", Value: "linux"}}}
	want := versionInfo{Module: "github.com/pickyman/pickyman", Version: "v0.3.0", Revision: "0123abcd", Modified: true,
		CommitTime: "2026-12-01T10:00:00Z", GoVersion: "go1.99.1", Platform: runtime.GOOS + "/" + runtime.GOARCH}
	got := versionFrom(bi)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versionFrom (-want +got):\n%s", diff)
	}
	var b strings.Builder
	got.write(&b)
	for _, line := range []string{"github.com/pickyman/pickyman v0.3.0", "revision    0123abcd (modified working tree)",
		"commit time 2026-12-01T10:00:00Z", "go          go1.99.1 "} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, b.String())
		}
	}
	if l := got.line(); l != "v0.3.0 (0123abcd, modified) go1.99.1" {
		t.Errorf("line = %q", l)
	}
	if v := versionFrom(nil); v.Version != "unknown" || v.GoVersion != runtime.Version() {
		t.Errorf("versionFrom(nil) = %+v", v)
	}
}

func TestVersionCommand(t *testing.T) {
	out, _, err := runCLI(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	if v["go_version"] != runtime.Version() || v["platform"] != runtime.GOOS+"/"+runtime.GOARCH || v["version"] == "" {
		t.Errorf("version -o json = %v", v)
	}
	if _, ok := v["modified"].(bool); !ok {
		t.Errorf("modified = %v, want a bool", v["modified"])
	}
	out, _, err = runCLI(t, "version")
	if err != nil || !strings.Contains(out, "go          "+runtime.Version()) {
		t.Errorf("version = %q, %v", out, err)
	}
	out, _, err = runCLI(t, "--version")
	if err != nil || !strings.HasPrefix(out, "pickyman ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version = %q, %v", out, err)
	}
}

// TestOutputFlag: every command with -o refuses an unknown format, naming the ones it takes,
// before doing anything.
func TestOutputFlag(t *testing.T) {
	for _, args := range [][]string{
		{"version", "-o", "yaml"},
		{"trace", "inspect", "no-such-trace.csv", "-o", "yaml"},
		{"cluster", "status", "--home", t.TempDir(), "-o", "yaml"},
	} {
		_, _, err := runCLI(t, args...)
		want := `-o "yaml": unknown output format (want text or json)`
		if err == nil || err.Error() != want {
			t.Errorf("%v: error = %v, want %q", args, err, want)
		}
	}
}
