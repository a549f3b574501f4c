package trainjob

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

const (
	gpuRes   = "nvidia.com/gpu"
	gpuLabel = "nvidia.com/gpu.product"
)

func wrapTrainJob(t *testing.T, u *unstructured.Unstructured) *Job {
	t.Helper()
	j, ok := Integration.Wrap(u).(*Job)
	if !ok {
		t.Fatalf("Wrap(TrainJob) = %T", Integration.Wrap(u))
	}
	return j
}

func TestTrainJobPodSets(t *testing.T) {
	cases := map[string]struct {
		job     *unstructured.Unstructured
		want    []pickymanv1.PodSet
		wantErr []string
	}{
		"numNodes pods of the GPU limit": {
			job:  utiltesting.MakeTrainJob("a", "ns").Nodes(4).GPUs(8).Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 4, GPUsPerPod: 8}},
		},
		"the GPU model from the node job's override": {
			job: utiltesting.MakeTrainJob("a", "ns").Nodes(2).GPUs(4).
				Override(map[string]any{"nodeSelector": map[string]any{gpuLabel: "A100"}}, "dataset-initializer").
				GPUProduct(gpuLabel, "H100").Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 2, GPUsPerPod: 4, GPUModel: "H100"}},
		},
		"no numNodes": {
			job:     utiltesting.MakeTrainJob("a", "ns").GPUs(8).Obj(),
			wantErr: []string{"spec.trainer.numNodes: Required value", "unless its spec.runtimeRef names"},
		},
		"zero nodes": {
			job:     utiltesting.MakeTrainJob("a", "ns").Nodes(0).GPUs(8).Obj(),
			wantErr: []string{"spec.trainer.numNodes: Invalid value: 0", "at least one node"},
		},
		"no GPU limit": {
			job:     utiltesting.MakeTrainJob("a", "ns").Nodes(2).GPUs(-1).Obj(),
			wantErr: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]: Required value", "GPU limit"},
		},
		"no resourcesPerNode": {
			job:     utiltesting.MakeTrainJob("a", "ns").Nodes(2).Obj(),
			wantErr: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]: Required value"},
		},
		"no trainer at all": {
			job: func() *unstructured.Unstructured {
				u := utiltesting.MakeTrainJob("a", "ns").Obj()
				unstructured.RemoveNestedField(u.Object, "spec", "trainer")
				return u
			}(),
			wantErr: []string{"spec.trainer.numNodes: Required value", "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]: Required value"},
		},
		"a scheduling gate on the node job": {
			job: utiltesting.MakeTrainJob("a", "ns").Nodes(1).GPUs(8).
				Override(map[string]any{"schedulingGates": []any{map[string]any{"name": "wait"}}}, "node").Obj(),
			wantErr: []string{"spec.podSpecOverrides[0].schedulingGates: Forbidden", "cannot be bound"},
		},
		"a malformed spec": {
			job: func() *unstructured.Unstructured {
				u := utiltesting.MakeTrainJob("a", "ns").Obj()
				u.Object["spec"].(map[string]any)["trainer"] = "eight nodes"
				return u
			}(),
			wantErr: []string{"spec: Invalid value"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := wrapTrainJob(t, tc.job).PodSets(gpuRes, gpuLabel)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("PodSets = %+v, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("PodSets error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("PodSets: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodSets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrainJobSuspendFinished(t *testing.T) {
	j := wrapTrainJob(t, utiltesting.MakeTrainJob("a", "ns").Nodes(2).GPUs(8).Obj())
	if j.IsSuspended() {
		t.Error("a new job is suspended")
	}
	j.Suspend(true)
	if s, _, _ := unstructured.NestedBool(j.obj.Object, "spec", "suspend"); !s || !j.IsSuspended() {
		t.Error("Suspend(true) did not set spec.suspend")
	}
	j.Suspend(false)
	if j.IsSuspended() {
		t.Error("Suspend(false) left the job suspended")
	}
	if got := j.PodTemplates(); got == nil || len(got) != 0 {
		t.Errorf("PodTemplates = %v, want an empty map", got)
	}

	for name, tc := range map[string]struct {
		conds             [][2]string
		finished, success bool
	}{
		"no conditions":       {},
		"suspended":           {conds: [][2]string{{"Suspended", "True"}}},
		"complete":            {conds: [][2]string{{"Suspended", "False"}, {"Complete", "True"}}, finished: true, success: true},
		"failed":              {conds: [][2]string{{"Failed", "True"}}, finished: true},
		"complete, not true":  {conds: [][2]string{{"Complete", "False"}}},
		"resumed then failed": {conds: [][2]string{{"Suspended", "False"}, {"Failed", "True"}}, finished: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := utiltesting.MakeTrainJob("a", "ns")
			for _, c := range tc.conds {
				w.Condition(c[0], metav1.ConditionStatus(c[1]))
			}
			f, s := wrapTrainJob(t, w.Obj()).Finished()
			if f != tc.finished || s != tc.success {
				t.Errorf("Finished = %v, %v; want %v, %v", f, s, tc.finished, tc.success)
			}
		})
	}
}

// The adapter changes spec.suspend and nothing else: the fields it does not model (image,
// environment, runtime reference, overrides it does not read, status) go back as read.
func TestTrainJobKeepsUnknownFields(t *testing.T) {
	u := utiltesting.MakeTrainJob("a", "ns").Nodes(2).GPUs(8).
		Override(map[string]any{"serviceAccountName": "trainer", "tolerations": []any{map[string]any{"key": "gpu", "operator": "Exists"}}}, "node").
		Condition("Created", metav1.ConditionTrue).Obj()
	u.Object["spec"].(map[string]any)["initializer"] = map[string]any{"dataset": map[string]any{"storageUri": "hf://tatsu-lab/alpaca"}}
	u.Object["spec"].(map[string]any)["someFutureField"] = map[string]any{"x": int64(1)}
	before, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	j := wrapTrainJob(t, u)
	if _, err := j.PodSets(gpuRes, gpuLabel); err != nil {
		t.Fatal(err)
	}
	j.Finished()
	j.Suspend(true)
	j.Suspend(false)
	after, err := json.Marshal(j.Object())
	if err != nil {
		t.Fatal(err)
	}
	var b, a map[string]any
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	b["spec"].(map[string]any)["suspend"] = false
	if diff := cmp.Diff(b, a); diff != "" {
		t.Errorf("object changed beyond spec.suspend (-want +got):\n%s", diff)
	}
}

func TestTrainJobPodSetOf(t *testing.T) {
	job := utiltesting.MakeTrainJob("a", "ns").Nodes(3).GPUs(8).Obj()
	j := wrapTrainJob(t, job)
	pod := func(mut func(p *corev1.Pod)) *corev1.Pod {
		p := utiltesting.MakeTrainJobPod(job, 2, 1)
		p.Labels[pickymanv1.LabelAllocation] = "trainjob-a"
		if mut != nil {
			mut(p)
		}
		return p
	}
	for name, tc := range map[string]struct {
		pod     *corev1.Pod
		set     string
		idx     int32
		matches bool
	}{
		"completion index label": {pod: pod(nil), set: "node", idx: 2, matches: true},
		"annotation only (before Kubernetes 1.28)": {pod: pod(func(p *corev1.Pod) {
			delete(p.Labels, "batch.kubernetes.io/job-completion-index")
		}), set: "node", idx: 2, matches: true},
		"no index": {pod: pod(func(p *corev1.Pod) {
			delete(p.Labels, "batch.kubernetes.io/job-completion-index")
			delete(p.Annotations, "batch.kubernetes.io/job-completion-index")
		}), set: "node", idx: jobframework.AnyIndex, matches: true},
		"a malformed index": {pod: pod(func(p *corev1.Pod) {
			p.Labels["batch.kubernetes.io/job-completion-index"] = "two"
		}), set: "node", idx: jobframework.AnyIndex, matches: true},
		"a second Job of the replicated job": {pod: pod(func(p *corev1.Pod) {
			p.Labels["jobset.sigs.k8s.io/job-index"] = "1"
		}), set: "node", idx: jobframework.AnyIndex, matches: true},
		"an initializer's pod": {pod: pod(func(p *corev1.Pod) {
			p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] = "dataset-initializer"
		})},
		"another JobSet's pod": {pod: pod(func(p *corev1.Pod) {
			p.Labels["jobset.sigs.k8s.io/jobset-name"] = "b"
		})},
		"another Allocation's pod": {pod: pod(func(p *corev1.Pod) {
			p.Labels[pickymanv1.LabelAllocation] = "pytorchjob-a"
		})},
	} {
		t.Run(name, func(t *testing.T) {
			set, idx, ok := j.PodSetOf(tc.pod)
			if ok != tc.matches || set != tc.set || idx != tc.idx {
				t.Errorf("PodSetOf = %q, %d, %v; want %q, %d, %v", set, idx, ok, tc.set, tc.idx, tc.matches)
			}
		})
	}
	if got, want := j.PodSelector(), map[string]string{"jobset.sigs.k8s.io/jobset-name": "a"}; !cmp.Equal(got, want) {
		t.Errorf("PodSelector = %v, want %v", got, want)
	}
	if got := jobframework.PodSetPath(j, "node").String(); got != "spec.trainer" {
		t.Errorf("PodSetPath(node) = %s", got)
	}
	if got := jobframework.GPULimitPath(j, "node", gpuRes).String(); got != "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]" {
		t.Errorf("GPULimitPath(node) = %s", got)
	}
	if got := jobframework.AllocationName(j.GVK().Kind, "a"); got != "trainjob-a" {
		t.Errorf("AllocationName = %s", got)
	}
	// Another kind's unstructured object is not a TrainJob.
	other := &unstructured.Unstructured{}
	other.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
	other.SetKind("JobSet")
	if w := Integration.Wrap(other); w != nil {
		t.Errorf("Wrap(JobSet) = %v, want nil", w)
	}
	if o := Integration.NewObject(); o.GetObjectKind().GroupVersionKind() != GVK {
		t.Errorf("NewObject kind = %v", o.GetObjectKind().GroupVersionKind())
	}
}
