package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	def, err := LoadConfig("")
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if def.Policy.Name != "pickyman" || len(def.Queues) != 1 {
		t.Errorf("defaults: policy %q, %d queues", def.Policy.Name, len(def.Queues))
	}
	// The shipped manager configuration loads, runs the PickyMan policy and elects a leader
	// (the Deployment runs two replicas: without election both would schedule).
	shipped, err := LoadConfig(filepath.Join("..", "..", "..", "config", "manager", "operator-config.yaml"))
	if err != nil {
		t.Fatalf("config/manager/operator-config.yaml: %v", err)
	}
	if shipped.Policy.Name != "pickyman" {
		t.Errorf("config/manager/operator-config.yaml runs policy %q, want pickyman", shipped.Policy.Name)
	}
	if le := shipped.Manager.LeaderElection; le == nil || !*le {
		t.Errorf("config/manager/operator-config.yaml: leader election %v, want on", le)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("policy:\n  name: nosuch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(bad); err == nil || !strings.Contains(err.Error(), "policy.name") {
		t.Errorf("unknown policy: error %v, want one naming policy.name", err)
	}
}
