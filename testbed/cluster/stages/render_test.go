package stages_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/pickyman/pickyman/testbed/cluster"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const fakeNow = "2026-01-02T03:04:05Z"

// funcs stands in for the template functions the kwok controller provides (same names and
// argument lists), with fixed answers so the rendered status is stable.
func funcs() template.FuncMap {
	return template.FuncMap{
		"Now":     func() string { return fakeNow },
		"Version": func() string { return "0.8.0" },
		"Quote": func(v any) string {
			data, err := json.Marshal(v)
			if err != nil || len(data) == 0 || data[0] != '"' {
				return strconv.Quote(fmt.Sprint(v))
			}
			return string(data)
		},
		"YAML": func(v any, indent ...int) (string, error) {
			data, err := yaml.Marshal(v)
			if err != nil {
				return "", err
			}
			s := string(data)
			if len(indent) == 1 && indent[0] > 0 {
				pad := strings.Repeat(" ", indent[0]*2)
				s = strings.ReplaceAll("\n"+s, "\n", "\n"+pad)
			}
			return s, nil
		},
		"list": func(v ...any) []any { return v },
		"NodeConditions": func() []map[string]any {
			return []map[string]any{
				{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
				{"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "ok"},
			}
		},
		"NodeIP":     func() string { return "10.0.0.1" },
		"NodeName":   func() string { return "kwok-a100-0" },
		"NodePort":   func() int { return 10250 },
		"NodeIPWith": func(string) string { return "10.0.0.1" },
		"PodIPWith": func(node string, hostNetwork bool, uid, name, ns string) string {
			return "10.244.0.7"
		},
	}
}

// render runs a stage's status template on obj, as the kwok controller does.
func render(t *testing.T, tmpl string, obj any) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	tp, err := template.New("status").Funcs(funcs()).Parse(tmpl)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var out bytes.Buffer
	if err := tp.Execute(&out, in); err != nil {
		t.Fatalf("execute: %v", err)
	}
	return out.Bytes()
}

func samplePod(phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-master-0", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{
			NodeName:       "kwok-a100-0",
			InitContainers: []corev1.Container{{Name: "init-pytorch", Image: "alpine:3.10"}},
			Containers:     []corev1.Container{{Name: "pytorch", Image: "trainer:1"}},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// TestStatusTemplatesRender renders every status template on a sample object, decodes the
// result strictly into the Kubernetes status type and compares it with a golden file
// (testdata/<stage>.golden.yaml; -update rewrites them).
func TestStatusTemplatesRender(t *testing.T) {
	all := loadStages(t)
	node := cluster.BuildNode("kwok-a100-0", cluster.Pool{Nodes: 1, GPUsPerNode: 8, Model: "A100"})
	node.Status = corev1.NodeStatus{Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable}
	type check func(t *testing.T, out []byte)
	podPhase := func(want corev1.PodPhase, exit int32, running bool) check {
		return func(t *testing.T, out []byte) {
			var st corev1.PodStatus
			if err := yaml.UnmarshalStrict(out, &st); err != nil {
				t.Fatalf("not a PodStatus: %v\n%s", err, out)
			}
			if st.Phase != want || len(st.ContainerStatuses) != 1 {
				t.Fatalf("phase %q with %d container statuses, want %q with 1", st.Phase, len(st.ContainerStatuses), want)
			}
			s := st.ContainerStatuses[0].State
			if running && s.Running == nil {
				t.Errorf("container not running: %+v", s)
			}
			if !running && (s.Terminated == nil || s.Terminated.ExitCode != exit) {
				t.Errorf("container state %+v, want terminated with exit code %d", s, exit)
			}
		}
	}
	tests := map[string]struct {
		obj   any
		check check
	}{
		"pickyman-node-initialize": {node, func(t *testing.T, out []byte) {
			var st corev1.NodeStatus
			if err := yaml.UnmarshalStrict(out, &st); err != nil {
				t.Fatalf("not a NodeStatus: %v\n%s", err, out)
			}
			gpu := st.Allocatable[cluster.GPUResource]
			if gpu.Value() != 8 || st.Phase != corev1.NodeRunning {
				t.Errorf("allocatable GPUs %v, phase %q; want 8 and Running", gpu.String(), st.Phase)
			}
		}},
		"pickyman-node-heartbeat": {node, func(t *testing.T, out []byte) {
			var st corev1.NodeStatus
			if err := yaml.UnmarshalStrict(out, &st); err != nil || len(st.Conditions) == 0 {
				t.Fatalf("not a NodeStatus with conditions: %v\n%s", err, out)
			}
		}},
		"pickyman-pod-running":  {samplePod(corev1.PodPending), podPhase(corev1.PodRunning, 0, true)},
		"pickyman-pod-complete": {samplePod(corev1.PodRunning), podPhase(corev1.PodSucceeded, 0, false)},
		"pickyman-pod-fail":     {samplePod(corev1.PodRunning), podPhase(corev1.PodFailed, 1, false)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, ok := all[name]
			if !ok {
				t.Fatalf("stage %s missing", name)
			}
			out := render(t, s.Spec.Next.StatusTemplate, tc.obj)
			tc.check(t, out)
			// Normalize through YAML so the golden file does not depend on template whitespace.
			var v any
			if err := yaml.Unmarshal(out, &v); err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("rendered status (-golden +got):\n%s", diff)
			}
		})
	}
}
