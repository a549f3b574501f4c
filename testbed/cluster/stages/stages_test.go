package stages_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/pickyman/pickyman/testbed/cluster/stages"
)

// stage is the part of a kwok Stage that this test checks.
type stage struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ResourceRef struct {
			Kind string `json:"kind"`
		} `json:"resourceRef"`
		Selector struct {
			MatchExpressions []struct {
				Key      string   `json:"key"`
				Operator string   `json:"operator"`
				Values   []string `json:"values"`
			} `json:"matchExpressions"`
		} `json:"selector"`
		Delay *struct{} `json:"delay"`
		Next  struct {
			StatusTemplate string `json:"statusTemplate"`
			Delete         bool   `json:"delete"`
		} `json:"next"`
	} `json:"spec"`
}

func loadStages(t *testing.T) map[string]stage {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "kwok", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stage files: %v", err)
	}
	out := map[string]stage{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s stage
		if err := yaml.UnmarshalStrict(data, &s); err != nil {
			// Strict would reject fields this test does not model; fall back to lax decoding.
			if err := yaml.Unmarshal(data, &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		if s.Kind != "Stage" {
			t.Fatalf("%s: kind %q, want Stage", f, s.Kind)
		}
		out[s.Metadata.Name] = s
	}
	return out
}

// TestStagesSelectOnTheSignal keeps the Go constants and the YAML stages in step: the
// completion stages select on CompleteAnnotation with the documented values, and end the pod
// in the documented phase.
func TestStagesSelectOnTheSignal(t *testing.T) {
	all := loadStages(t)
	key := `.metadata.annotations["` + stages.CompleteAnnotation + `"]`
	type want struct{ value, phase, exitCode string }
	for name, w := range map[string]want{
		"pickyman-pod-complete": {stages.CompleteSucceeded, "phase: Succeeded", "exitCode: 0"},
		"pickyman-pod-fail":     {stages.CompleteFailed, "phase: Failed", "exitCode: 1"},
	} {
		s, ok := all[name]
		if !ok {
			t.Fatalf("stage %s missing", name)
		}
		var values []string
		for _, e := range s.Spec.Selector.MatchExpressions {
			if e.Key == key {
				values = e.Values
			}
		}
		if diff := cmp.Diff([]string{w.value}, values); diff != "" {
			t.Errorf("%s: selector on %s (-want +got):\n%s", name, key, diff)
		}
		for _, text := range []string{w.phase, w.exitCode} {
			if !strings.Contains(s.Spec.Next.StatusTemplate, text) {
				t.Errorf("%s: status template lacks %q", name, text)
			}
		}
		if s.Spec.Delay != nil {
			t.Errorf("%s: completion must follow the signal, not a delay", name)
		}
	}
}

// TestStagesCoverTheLifecycle checks that every resource the kwok controller must drive has
// stages, since kwokctl drops its defaults once any stage is configured.
func TestStagesCoverTheLifecycle(t *testing.T) {
	all := loadStages(t)
	var got []string
	for name, s := range all {
		got = append(got, s.Spec.ResourceRef.Kind+"/"+name)
	}
	want := []string{
		"Node/pickyman-node-heartbeat", "Node/pickyman-node-initialize",
		"Pod/pickyman-pod-complete", "Pod/pickyman-pod-delete", "Pod/pickyman-pod-fail", "Pod/pickyman-pod-running",
	}
	if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if !all["pickyman-pod-delete"].Spec.Next.Delete {
		t.Error("pod-delete stage does not delete")
	}
	for name, s := range all {
		for _, e := range s.Spec.Selector.MatchExpressions {
			if strings.Contains(e.Key, "ownerReferences") {
				t.Errorf("%s selects on %s: training pods are owned by jobs of any kind", name, e.Key)
			}
		}
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})
