package replay

import (
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/rayjob"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// TestBuildRayJob: a trace job as a RayJob has the trace job's gang as the operator's RayJob
// adapter reads it (one worker group of Workers x GPUsPerWorker, pinned to the GPU model), the
// same queue, priority, hints and testbed epoch time as the PyTorchJob, and a head without
// GPUs outside the gang.
func TestBuildRayJob(t *testing.T) {
	rj, err := BuildRayJob(traceJob("job-1", 3, 4), "t00001", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if rj.Spec.SubmissionMode != rayv1.HTTPMode || !rj.Spec.ShutdownAfterJobFinishes {
		t.Errorf("submission %q, shutdown after finishing %v; want HTTPMode and true", rj.Spec.SubmissionMode, rj.Spec.ShutdownAfterJobFinishes)
	}
	sets, err := (*rayjob.Job)(rj).PodSets(cluster.GPUResource.String(), cluster.LabelGPUProduct)
	if err != nil {
		t.Fatal(err)
	}
	want := []pickymanv1.PodSet{{Name: "gpu", Count: 3, GPUsPerPod: 4, GPUModel: "Tesla-V100-SXM2-32GB"}}
	if d := cmp.Diff(want, sets); d != "" {
		t.Errorf("gang (-want +got):\n%s", d)
	}
	w := rj.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template
	if w.Annotations[AnnotationSimEpochTime] != "6m0s" || w.Annotations[pickymanv1.AnnotationEpochs] != "10" || w.Spec.PriorityClassName != "pickyman-replay-10" {
		t.Errorf("worker template annotations %v, priority class %q", w.Annotations, w.Spec.PriorityClassName)
	}
	if rj.Labels[pickymanv1.LabelQueue] != "vc-7-a" || rj.Annotations[AnnotationTraceID] != "job-1" {
		t.Errorf("labels %v annotations %v", rj.Labels, rj.Annotations)
	}
	if len(rj.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits) != 0 {
		t.Error("the head asks for GPUs")
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"", []string{KindPyTorchJob, KindPyTorchJob}},
		{KindRayJob, []string{KindRayJob, KindRayJob}},
		{KindTrainJob, []string{KindTrainJob, KindTrainJob}},
		{KindMixed, []string{KindPyTorchJob, KindRayJob, KindTrainJob, KindPyTorchJob}},
	} {
		for i, w := range tc.want {
			if got, err := KindOf(tc.kind, i); err != nil || got != w {
				t.Errorf("KindOf(%q, %d) = %q, %v; want %q", tc.kind, i, got, err, w)
			}
		}
	}
	if _, err := KindOf("mpijob", 0); err == nil {
		t.Error("an unknown kind was accepted")
	}
}

// TestSchemeKnowsEveryKind: the client scheme of a replay knows every kind it submits (a
// RayJob submitted with a scheme without it fails before reaching the API server).
func TestSchemeKnowsEveryKind(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{KindPyTorchJob, KindRayJob, KindTrainJob} {
		obj, err := Build(kind, traceJob("job-1", 2, 4), "t00000", "ns", "r1")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ObjectKinds(obj); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if _, _, err := s.ObjectKinds(&pickymanv1.Allocation{}); err != nil {
		t.Errorf("Allocation: %v", err)
	}
}
