package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    int64
		wantErr string
	}{
		{name: "unset", env: nil, want: 0},
		{name: "no limit", env: map[string]string{EnvMemoryLimit: "0"}, want: 0},
		{name: "512Mi", env: map[string]string{EnvMemoryLimit: "536870912"}, want: 483183820},
		{name: "GOMEMLIMIT wins", env: map[string]string{EnvMemoryLimit: "536870912", "GOMEMLIMIT": "300MiB"}, want: 0},
		{name: "not a number", env: map[string]string{EnvMemoryLimit: "512Mi"}, wantErr: `PICKYMAN_MEMORY_LIMIT="512Mi": want the container's memory limit in bytes`},
		{name: "negative", env: map[string]string{EnvMemoryLimit: "-1"}, wantErr: "want the container's memory limit in bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MemoryLimit(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MemoryLimit = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestShippedDeploymentSetsMemoryLimit: the installed Deployment gives the operator its
// container's memory limit, from which it sets the runtime's soft limit.
func TestShippedDeploymentSetsMemoryLimit(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		d := &appsv1.Deployment{}
		if err := yaml.Unmarshal([]byte(doc), d); err != nil {
			t.Fatal(err)
		}
		if d.Kind == "Deployment" {
			dep = d
		}
	}
	if dep == nil {
		t.Fatal("config/manager/manager.yaml has no Deployment")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Fatalf("container %s has no memory limit", c.Name)
	}
	for _, e := range c.Env {
		if e.Name != EnvMemoryLimit {
			continue
		}
		ref := e.ValueFrom
		if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "limits.memory" || ref.ResourceFieldRef.ContainerName != c.Name {
			t.Fatalf("%s is %+v; want limits.memory of container %s", EnvMemoryLimit, e, c.Name)
		}
		return
	}
	t.Fatalf("container %s does not set %s", c.Name, EnvMemoryLimit)
}
