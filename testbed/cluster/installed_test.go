package cluster

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestInstalledManifestsRunTheTestbedAgent: the testbed overlay runs the testbed agent's
// image and entrypoint with the testbed's flags in the agent's container, and keeps the
// agent's image in its init container.
func TestInstalledManifestsRunTheTestbedAgent(t *testing.T) {
	o := DefaultOptions("")
	o.PickyMan = &PickyMan{TimeScale: 60, Seed: 7}
	img := ImageArchives{OperatorTag: "ghcr.io/pickyman/pickyman-operator:t", AgentTag: "ghcr.io/pickyman/pickyman-agent:t",
		TestbedAgentTag: "ghcr.io/pickyman/pickyman-testbed-agent:t"}
	objs, err := o.installedManifests(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if obj.GetKind() != "DaemonSet" || obj.GetName() != AgentDaemonSet {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		inits, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "initContainers")
		if len(containers) != 1 || len(inits) == 0 {
			t.Fatalf("agent DaemonSet: %d containers, %d init containers", len(containers), len(inits))
		}
		c := containers[0].(map[string]any)
		if c["image"] != img.TestbedAgentTag {
			t.Errorf("agent container image %v, want %s", c["image"], img.TestbedAgentTag)
		}
		cmd, _, _ := unstructured.NestedStringSlice(c, "command")
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		if !slices.Equal(cmd, []string{"/" + ComponentAgent}) {
			t.Errorf("agent container command %q", cmd)
		}
		if !slices.Contains(args, "--time-scale") || !slices.Contains(args, "60") || slices.Contains(args, "--testbed") {
			t.Errorf("agent container args %q", args)
		}
		for _, ic := range inits {
			if im := ic.(map[string]any)["image"]; im != img.AgentTag {
				t.Errorf("init container image %v, want the agent's %s", im, img.AgentTag)
			}
		}
		return
	}
	t.Fatal("no agent DaemonSet")
}
