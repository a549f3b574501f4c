//go:build realnode

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRealNodeReclaimsDeadClusters: what a cluster left on the host when its processes died
// without `down` (run directory with mounts, cgroup, a bridge holding an address in the real
// nodes' range, the guard rule) is removed before real nodes start; the state of a cluster
// with a live process is left alone. Root (make test-realnode).
func TestRealNodeReclaimsDeadClusters(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (make test-realnode)")
	}
	const dead, deadBridgeOnly, live = "deadbe01", "beef01", "11ebe502"
	o := DefaultOptions("")
	o.Home = t.TempDir()
	o.Name = "reclaimtest"

	// The dead cluster: node 0 with everything, as a killed cluster leaves it.
	n := hostRealNode(dead, 0)
	must(t, os.MkdirAll(filepath.Join(n.Run, "kubelet"), 0o755))
	must(t, syscall.Mount("tmpfs", filepath.Join(n.Run, "kubelet"), "tmpfs", 0, "size=1m"))
	must(t, ensureCgroup(n.CgroupRoot))
	mustRun(t, "ip", "link", "add", n.Bridge, "type", "bridge")
	mustRun(t, "ip", "addr", "add", "10.244.0.1/24", "dev", n.Bridge)
	mustRun(t, "ip", "link", "set", n.Bridge, "alias", realNodeComment+":deadcluster")
	rule := []string{"FORWARD", "-i", "pmrn" + dead[:6] + "+", "!", "-o", "pmrn" + dead[:6] + "+",
		"-m", "comment", "--comment", realNodeComment + ":deadcluster", "-j", "DROP"}
	mustRun(t, "iptables", append([]string{"-w", "-I"}, rule...)...)
	// Another dead cluster known by its bridge alone.
	orphan := realNodeBridge(deadBridgeOnly, 0)
	mustRun(t, "ip", "link", "add", orphan, "type", "bridge")
	// A live cluster: a process names its runtime directory.
	l := hostRealNode(live, 0)
	must(t, os.MkdirAll(l.Run, 0o755))
	mustRun(t, "ip", "link", "add", l.Bridge, "type", "bridge")
	sleeper := exec.Command("sh", "-c", "sleep 300", filepath.Join(l.Run, "kubelet"))
	must(t, sleeper.Start())
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
		for _, id := range []string{dead[:6], deadBridgeOnly, live[:6]} {
			reclaimRealNodeCluster(id)
		}
	})

	if got := strings.Join(o.deadRealNodeClusters(), ","); !strings.Contains(got, dead[:6]) || !strings.Contains(got, deadBridgeOnly) || strings.Contains(got, live[:6]) {
		t.Fatalf("dead clusters: %q; want %s and %s, not %s", got, dead[:6], deadBridgeOnly, live[:6])
	}
	if err := o.reclaimDeadRealNodes(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(realRunBase, dead)); !os.IsNotExist(err) {
		t.Errorf("the dead cluster's runtime directory is left (%v)", err)
	}
	if m := mountsUnder(filepath.Join(realRunBase, dead)); len(m) > 0 {
		t.Errorf("the dead cluster's mounts are left: %v", m)
	}
	for _, b := range []string{n.Bridge, orphan} {
		if _, err := run("ip", "link", "show", "dev", b); err == nil {
			t.Errorf("bridge %s is left", b)
		}
	}
	for _, m := range cgroupMounts() {
		if _, err := os.Stat(filepath.Join(m, n.CgroupRoot)); err == nil {
			t.Errorf("cgroup %s is left", filepath.Join(m, n.CgroupRoot))
		}
	}
	if _, err := run("iptables", append([]string{"-w", "-C"}, rule...)...); err == nil {
		t.Error("the dead cluster's guard rule is left")
	}
	// The live one is untouched.
	if _, err := os.Stat(l.Run); err != nil {
		t.Errorf("the live cluster's runtime directory: %v", err)
	}
	if _, err := run("ip", "link", "show", "dev", l.Bridge); err != nil {
		t.Errorf("the live cluster's bridge: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if _, err := run(name, args...); err != nil {
		t.Fatal(err)
	}
}
