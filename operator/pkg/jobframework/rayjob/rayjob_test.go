package rayjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

const (
	gpuRes   = "nvidia.com/gpu"
	gpuLabel = "nvidia.com/gpu.product"
)

func TestRayJobPodSets(t *testing.T) {
	cases := map[string]struct {
		job     *rayv1.RayJob
		want    []pickymanv1.PodSet
		wantErr []string
	}{
		"cpu head stays out of the gang": {
			job:  utiltesting.MakeRayJob("a", "ns").WorkerGroup("gpu", 3, 8).Obj(),
			want: []pickymanv1.PodSet{{Name: "gpu", Count: 3, GPUsPerPod: 8}},
		},
		"gpu head first, then the groups in order": {
			job: utiltesting.MakeRayJob("a", "ns").HeadGPUs(4).WorkerGroup("b", 2, 4).WorkerGroup("a", 1, 4).GPUProduct(gpuLabel, "H100").Obj(),
			want: []pickymanv1.PodSet{
				{Name: "head", Count: 1, GPUsPerPod: 4, GPUModel: "H100"},
				{Name: "b", Count: 2, GPUsPerPod: 4, GPUModel: "H100"},
				{Name: "a", Count: 1, GPUsPerPod: 4, GPUModel: "H100"},
			},
		},
		"multi-host groups count every host": {
			job: func() *rayv1.RayJob {
				j := utiltesting.MakeRayJob("a", "ns").WorkerGroup("tpu", 2, 4).Obj()
				j.Spec.RayClusterSpec.WorkerGroupSpecs[0].NumOfHosts = 4
				return j
			}(),
			want: []pickymanv1.PodSet{{Name: "tpu", Count: 8, GPUsPerPod: 4}},
		},
		"a worker group without a GPU limit names the field": {
			job:     utiltesting.MakeRayJob("a", "ns").WorkerGroup("gpu", 1, 8).WorkerGroup("cpu", 2, -1).Obj(),
			wantErr: []string{"spec.rayClusterSpec.workerGroupSpecs[1].template.spec.containers[resources.limits][nvidia.com/gpu]", "GPU limit"},
		},
		"no GPU workers": {
			job:     utiltesting.MakeRayJob("a", "ns").Obj(),
			wantErr: []string{"spec.rayClusterSpec.workerGroupSpecs", "GPU workers"},
		},
		"no cluster spec": {
			job: func() *rayv1.RayJob {
				j := utiltesting.MakeRayJob("a", "ns").Obj()
				j.Spec.RayClusterSpec = nil
				return j
			}(),
			wantErr: []string{"spec.rayClusterSpec: Required value"},
		},
		"an existing cluster": {
			job: func() *rayv1.RayJob {
				j := utiltesting.MakeRayJob("a", "ns").WorkerGroup("gpu", 1, 8).Obj()
				j.Spec.ClusterSelector = map[string]string{"ray.io/cluster": "shared"}
				return j
			}(),
			wantErr: []string{"spec.clusterSelector", "existing cluster"},
		},
		"the autoscaler": {
			job: func() *rayv1.RayJob {
				j := utiltesting.MakeRayJob("a", "ns").WorkerGroup("gpu", 1, 8).Obj()
				j.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
				return j
			}(),
			wantErr: []string{"spec.rayClusterSpec.enableInTreeAutoscaling", "fixed gangs"},
		},
		"duplicate group names": {
			job:     utiltesting.MakeRayJob("a", "ns").WorkerGroup("gpu", 1, 8).WorkerGroup("gpu", 1, 8).Obj(),
			wantErr: []string{"spec.rayClusterSpec.workerGroupSpecs[1].groupName: Duplicate value"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := (*Job)(tc.job).PodSets(gpuRes, gpuLabel)
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

func TestRayJobTemplatesSuspendFinished(t *testing.T) {
	j := (*Job)(utiltesting.MakeRayJob("a", "ns").WorkerGroup("gpu", 2, 8).Obj())
	if got := j.PodTemplates(); len(got) != 1 || got["gpu"] == nil {
		t.Errorf("templates of a job with a CPU head: %v, want only the gpu group", got)
	}
	withHead := (*Job)(utiltesting.MakeRayJob("a", "ns").HeadGPUs(8).WorkerGroup("gpu", 2, 8).Obj())
	if got := withHead.PodTemplates(); len(got) != 2 || got[RayHeadPodSet] == nil {
		t.Errorf("templates of a job with a GPU head: %v, want head and gpu", got)
	}
	// The templates are the job's own: a change through them changes the job.
	j.PodTemplates()["gpu"].Spec.SchedulerName = "pickyman"
	if j.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.SchedulerName != "pickyman" {
		t.Error("PodTemplates returned a copy")
	}
	if j.IsSuspended() {
		t.Error("a new job is suspended")
	}
	j.Suspend(true)
	if !j.IsSuspended() || !j.Spec.Suspend {
		t.Error("Suspend(true) did not set spec.suspend")
	}
	for status, want := range map[[2]string][2]bool{
		{"Running", "RUNNING"}:      {false, false},
		{"Suspended", ""}:           {false, false},
		{"Complete", "SUCCEEDED"}:   {true, true},
		{"Complete", "STOPPED"}:     {true, false},
		{"Failed", "FAILED"}:        {true, false},
		{"ValidationFailed", ""}:    {true, false},
		{"Initializing", "PENDING"}: {false, false},
	} {
		j.Status.JobDeploymentStatus, j.Status.JobStatus = rayv1.JobDeploymentStatus(status[0]), rayv1.JobStatus(status[1])
		if f, s := j.Finished(); f != want[0] || s != want[1] {
			t.Errorf("Finished with %v = %v, %v; want %v, %v", status, f, s, want[0], want[1])
		}
	}
}

func TestRayJobPodSetOf(t *testing.T) {
	job := utiltesting.MakeRayJob("a", "ns").HeadGPUs(8).WorkerGroup("gpu", 2, 8).Obj()
	j := (*Job)(job)
	for _, tpl := range j.PodTemplates() {
		tpl.Labels = map[string]string{pickymanv1.LabelAllocation: jobframework.AllocationName("RayJob", "a")}
	}
	head := utiltesting.MakeRayPod(job, "", "a-head")
	worker := utiltesting.MakeRayPod(job, "gpu", "a-gpu-worker-x1")
	other := utiltesting.MakeRayPod(job, "gpu", "b-gpu-worker-x1")
	other.Labels[pickymanv1.LabelAllocation] = jobframework.AllocationName("RayJob", "b")
	for _, tc := range []struct {
		name    string
		set     string
		idx     int32
		matches bool
	}{
		{head.Name, RayHeadPodSet, jobframework.AnyIndex, true},
		{worker.Name, "gpu", jobframework.AnyIndex, true},
		{other.Name, "", 0, false},
	} {
		p := head
		switch tc.name {
		case worker.Name:
			p = worker
		case other.Name:
			p = other
		}
		set, idx, ok := j.PodSetOf(p)
		if ok != tc.matches || set != tc.set || idx != tc.idx {
			t.Errorf("PodSetOf(%s) = %q, %d, %v; want %q, %d, %v", tc.name, set, idx, ok, tc.set, tc.idx, tc.matches)
		}
	}
	if got, want := j.PodSelector(), map[string]string{pickymanv1.LabelAllocation: "rayjob-a"}; !cmp.Equal(got, want) {
		t.Errorf("PodSelector = %v, want %v", got, want)
	}
	if w := Integration.Wrap(job); w == nil || w.GVK() != GVK {
		t.Errorf("Wrap(RayJob) = %v", w)
	}
	if got := jobframework.PodSetPath(j, "gpu").String(); got != "spec.rayClusterSpec.workerGroupSpecs[0]" {
		t.Errorf("PodSetPath(gpu) = %s", got)
	}
}
