package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDaemonSetLeastPrivilege reads config/agent/daemonset.yaml and checks the privileges
// docs/agent.md promises: host PID (for peer pids), the shared socket directory, non-root,
// no capabilities, read-only root filesystem; only the init container runs as root, with
// CAP_CHOWN alone.
func TestDaemonSetLeastPrivilege(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "agent", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID || spec.HostNetwork || spec.HostIPC {
		t.Errorf("host namespaces: pid %v network %v ipc %v, want only pid", spec.HostPID, spec.HostNetwork, spec.HostIPC)
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod does not require non-root")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 || sc.Privileged != nil && *sc.Privileged {
		t.Errorf("agent container security context %+v is not least privilege", sc)
	}
	if len(c.Resources.Limits) == 0 {
		t.Error("agent container has no limits")
	}
	if len(spec.InitContainers) != 1 {
		t.Fatalf("%d init containers, want 1", len(spec.InitContainers))
	}
	if add := spec.InitContainers[0].SecurityContext.Capabilities.Add; !cmp.Equal(add, []corev1.Capability{"CHOWN"}) {
		t.Errorf("init container adds %v, want only CHOWN", add)
	}
	var hostPaths []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	if diff := cmp.Diff([]string{"/var/run/pickyman"}, hostPaths); diff != "" {
		t.Errorf("host paths (-want +got):\n%s", diff)
	}
}

func TestPrepareSocketDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "pickyman")
	if err := PrepareSocketDir(dir, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("socket dir %v, %v; want a 0755 directory", fi, err)
	}
	// A directory left with another mode gets 0755 again; a prepared one is left as it is.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := PrepareSocketDir(dir, os.Getuid()); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("socket dir %v, %v; want 0755", fi, err)
		}
	}
}
