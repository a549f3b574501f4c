package pytorchjob

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

const (
	gpuRes   = "nvidia.com/gpu"
	gpuLabel = "nvidia.com/gpu.product"
)

func TestPyTorchJobPodSets(t *testing.T) {
	cases := map[string]struct {
		job     *kftraining.PyTorchJob
		want    []pickymanv1.PodSet
		wantErr string
	}{
		"master only": {
			job:  utiltesting.MakePyTorchJob("a", "ns").Master(2).Obj(),
			want: []pickymanv1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 2}},
		},
		"master first, then workers": {
			job: utiltesting.MakePyTorchJob("a", "ns").Master(8).Workers(3, 8).Obj(),
			want: []pickymanv1.PodSet{
				{Name: "Master", Count: 1, GPUsPerPod: 8},
				{Name: "Worker", Count: 3, GPUsPerPod: 8},
			},
		},
		"gpu model from the node selector": {
			job: utiltesting.MakePyTorchJob("a", "ns").Workers(2, 4).GPUProduct(gpuLabel, "A100").Obj(),
			want: []pickymanv1.PodSet{
				{Name: "Master", Count: 1, GPUsPerPod: 1, GPUModel: "A100"},
				{Name: "Worker", Count: 2, GPUsPerPod: 4, GPUModel: "A100"},
			},
		},
		"workers only": {
			job:  utiltesting.MakePyTorchJob("a", "ns").NoMaster().Workers(4, 1).Obj(),
			want: []pickymanv1.PodSet{{Name: "Worker", Count: 4, GPUsPerPod: 1}},
		},
		"no gpu limit names the field": {
			job:     utiltesting.MakePyTorchJob("a", "ns").Workers(2, -1).Obj(),
			wantErr: "spec.pytorchReplicaSpecs[Worker].template.spec.containers[resources.limits][nvidia.com/gpu]",
		},
		"no replicas": {
			job:     utiltesting.MakePyTorchJob("a", "ns").NoMaster().Obj(),
			wantErr: "spec.pytorchReplicaSpecs: Required value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := (*Job)(tc.job).PodSets(gpuRes, gpuLabel)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PodSets error = %v, want it to contain %q", err, tc.wantErr)
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

func TestGangShape(t *testing.T) {
	cases := map[string]struct {
		sets        []pickymanv1.PodSet
		wantWorkers int32
		wantPer     int32
		wantErr     bool
	}{
		"uniform": {
			sets:        []pickymanv1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 8}, {Name: "Worker", Count: 3, GPUsPerPod: 8}},
			wantWorkers: 4, wantPer: 8,
		},
		"different gpu counts": {
			sets:    []pickymanv1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 1}, {Name: "Worker", Count: 3, GPUsPerPod: 8}},
			wantErr: true,
		},
		"different gpu models": {
			sets:    []pickymanv1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 1, GPUModel: "A"}, {Name: "Worker", Count: 3, GPUsPerPod: 1}},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w, per, _, err := jobframework.GangShape(tc.sets)
			if (err != nil) != tc.wantErr {
				t.Fatalf("GangShape error = %v, wantErr %v", err, tc.wantErr)
			}
			if w != tc.wantWorkers || per != tc.wantPer {
				t.Errorf("GangShape = %d x %d, want %d x %d", w, per, tc.wantWorkers, tc.wantPer)
			}
		})
	}
}

func TestPyTorchJobSuspendAndFinished(t *testing.T) {
	cases := map[string]struct {
		job           *kftraining.PyTorchJob
		wantSuspended bool
		wantFinished  bool
		wantSucceeded bool
	}{
		"new job runs":      {job: utiltesting.MakePyTorchJob("a", "ns").Obj()},
		"suspended":         {job: utiltesting.MakePyTorchJob("a", "ns").Suspend(true).Obj(), wantSuspended: true},
		"running":           {job: utiltesting.MakePyTorchJob("a", "ns").Condition(kftraining.JobRunning).Obj()},
		"succeeded":         {job: utiltesting.MakePyTorchJob("a", "ns").Condition(kftraining.JobSucceeded).Obj(), wantFinished: true, wantSucceeded: true},
		"failed":            {job: utiltesting.MakePyTorchJob("a", "ns").Condition(kftraining.JobFailed).Obj(), wantFinished: true},
		"suspend condition": {job: utiltesting.MakePyTorchJob("a", "ns").Suspend(true).Condition(kftraining.JobSuspended).Obj(), wantSuspended: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := (*Job)(tc.job)
			if got := j.IsSuspended(); got != tc.wantSuspended {
				t.Errorf("IsSuspended = %v, want %v", got, tc.wantSuspended)
			}
			fin, ok := j.Finished()
			if fin != tc.wantFinished || ok != tc.wantSucceeded {
				t.Errorf("Finished = %v, %v; want %v, %v", fin, ok, tc.wantFinished, tc.wantSucceeded)
			}
			j.Suspend(!tc.wantSuspended)
			if j.IsSuspended() == tc.wantSuspended {
				t.Errorf("Suspend(%v) did not change IsSuspended", !tc.wantSuspended)
			}
		})
	}
}

func TestPyTorchJobPodSetOf(t *testing.T) {
	job := utiltesting.MakePyTorchJob("train", "ns").Workers(3, 1).Obj()
	other := utiltesting.MakePyTorchJob("other", "ns").Obj()
	noIndex := utiltesting.MakePod(job, kftraining.PyTorchJobReplicaTypeWorker, 0)
	delete(noIndex.Labels, kftraining.ReplicaIndexLabel)
	type want struct {
		Set   string
		Index int32
		OK    bool
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want want
	}{
		"master":         {pod: utiltesting.MakePod(job, kftraining.PyTorchJobReplicaTypeMaster, 0), want: want{"Master", 0, true}},
		"worker 2":       {pod: utiltesting.MakePod(job, kftraining.PyTorchJobReplicaTypeWorker, 2), want: want{"Worker", 2, true}},
		"another job":    {pod: utiltesting.MakePod(other, kftraining.PyTorchJobReplicaTypeMaster, 0)},
		"no index label": {pod: noIndex},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, i, ok := (*Job)(job).PodSetOf(tc.pod)
			if diff := cmp.Diff(tc.want, want{s, i, ok}); diff != "" {
				t.Errorf("PodSetOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadHints(t *testing.T) {
	cases := map[string]struct {
		job     *kftraining.PyTorchJob
		want    jobframework.Hints
		wantErr string
	}{
		"none": {job: utiltesting.MakePyTorchJob("a", "ns").Obj()},
		"all": {
			job: utiltesting.MakePyTorchJob("a", "ns").Label(pickymanv1.LabelModel, "resnet50").
				Annotation(pickymanv1.AnnotationEpochs, "90").
				Annotation(pickymanv1.AnnotationDatasetBytes, "1000").
				Annotation(pickymanv1.AnnotationCheckpointBytes, "200").
				Annotation(pickymanv1.AnnotationEstimate, "2h30m").Obj(),
			want: jobframework.Hints{Model: "resnet50", Epochs: 90, DatasetBytes: 1000, CheckpointBytes: 200, Estimate: 150 * time.Minute},
		},
		"bad epochs": {
			job:     utiltesting.MakePyTorchJob("a", "ns").Annotation(pickymanv1.AnnotationEpochs, "many").Obj(),
			wantErr: pickymanv1.AnnotationEpochs,
		},
		"bad estimate": {
			job:     utiltesting.MakePyTorchJob("a", "ns").Annotation(pickymanv1.AnnotationEstimate, "soon").Obj(),
			wantErr: pickymanv1.AnnotationEstimate,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := jobframework.ReadHints(tc.job)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadHints error = %v, want it to name %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadHints: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadHints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWrapAndAllocationName(t *testing.T) {
	job := utiltesting.MakePyTorchJob("train", "ns").Obj()
	if Integration.Wrap(job) == nil {
		t.Fatal("Wrap(PyTorchJob) = nil")
	}
	if Integration.Wrap(&corev1.Pod{}) != nil {
		t.Error("Wrap(Pod) != nil")
	}
	if got, want := jobframework.AllocationName("PyTorchJob", "train"), "pytorchjob-train"; got != want {
		t.Errorf("AllocationName = %q, want %q", got, want)
	}
	if !jobframework.Managed(job) {
		t.Error("job with a queue label is not managed")
	}
	if jobframework.Managed(utiltesting.MakePyTorchJob("x", "ns").Queue("").Obj()) {
		t.Error("job without a queue label is managed")
	}
}
