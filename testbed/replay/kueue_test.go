package replay

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

func TestKueueFlavors(t *testing.T) {
	c, err := traces.ParseCluster("4x8,2x4:V100,1x8:A100")
	if err != nil {
		t.Fatal(err)
	}
	got := KueueFlavors(c, "A100")
	want := []KueueFlavor{{Model: "A100", Product: "NVIDIA-A100-SXM4-80GB", GPUs: 40}, {Model: "V100", Product: "Tesla-V100-SXM2-32GB", GPUs: 8}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("flavors (-want +got):\n%s", d)
	}
}

func TestKueueObjects(t *testing.T) {
	jobs := []traces.Job{{Priority: 0}, {Priority: 10}, {Priority: 10}, {Priority: -3}}
	objs := KueueObjects(jobs, "replay-x", []KueueFlavor{{Model: "A100", Product: "P", GPUs: 32}})
	var kinds []string
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
		byKind[o.GetKind()] = o
		if o.GetAPIVersion() != "kueue.x-k8s.io/v1beta2" {
			t.Errorf("%s: apiVersion %s", o.GetName(), o.GetAPIVersion())
		}
	}
	want := []string{"ResourceFlavor/gpu-a100", "ClusterQueue/pickyman-replay", "LocalQueue/replay",
		"WorkloadPriorityClass/pickyman-replay-10", "WorkloadPriorityClass/pickyman-replay-m3"}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Fatalf("objects (-want +got):\n%s", d)
	}
	cq := byKind["ClusterQueue"].Object
	if p, _, _ := unstructured.NestedString(cq, "spec", "preemption", "withinClusterQueue"); p != "LowerPriority" {
		t.Errorf("withinClusterQueue %q", p)
	}
	groups, _, _ := unstructured.NestedSlice(cq, "spec", "resourceGroups")
	flavor := groups[0].(map[string]any)["flavors"].([]any)[0].(map[string]any)
	quota := flavor["resources"].([]any)[0].(map[string]any)
	if flavor["name"] != "gpu-a100" || quota["name"] != "nvidia.com/gpu" || quota["nominalQuota"] != int64(32) {
		t.Errorf("quota %v", flavor)
	}
	if byKind["LocalQueue"].GetNamespace() != "replay-x" {
		t.Errorf("LocalQueue in %q", byKind["LocalQueue"].GetNamespace())
	}
	if v := byKind["WorkloadPriorityClass"].Object["value"]; v != int64(-3) {
		t.Errorf("last priority class value %v", v)
	}
}

func TestForKueue(t *testing.T) {
	pj, err := BuildJob(traceJob("job-1", 2, 4), "t00001", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := ForKueue(pj, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*kftraining.PyTorchJob)
	if AnnotationResumeLatest != "pickyman.dev/sim-resume-latest" { // agentsim.AnnotationResumeLatest
		t.Fatalf("the agent reads pickyman.dev/sim-resume-latest; the replay writes %q", AnnotationResumeLatest)
	}
	if _, ok := got.Labels[pickymanv1.LabelQueue]; ok {
		t.Error("the job still names a PickyMan queue: PickyMan's operator would manage it")
	}
	if _, ok := pj.Labels[pickymanv1.LabelQueue]; !ok {
		t.Error("ForKueue changed its argument")
	}
	if got.Labels[KueueLabelQueue] != KueueLocalQueue || got.Labels[KueueLabelPriority] != "pickyman-replay-10" {
		t.Errorf("labels %v", got.Labels)
	}
	if got.Spec.RunPolicy.Suspend == nil || !*got.Spec.RunPolicy.Suspend {
		t.Error("not created suspended")
	}
	for rt, r := range got.Spec.PyTorchReplicaSpecs {
		if r.Template.Annotations[AnnotationResumeLatest] != "true" {
			t.Errorf("%s: pods do not resume from their newest checkpoint", rt)
		}
		if pc := r.Template.Spec.PriorityClassName; pc != "" {
			t.Errorf("%s: pods of PriorityClass %s: kube-scheduler could preempt them", rt, pc)
		}
	}
	obj, err = ForKueue(pj, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := obj.GetLabels()[KueueLabelPriority]; ok {
		t.Errorf("priority 0 has a priority class %q", p)
	}
	ray, err := BuildRayJob(traceJob("job-2", 1, 1), "t00002", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ForKueue(ray, 0); err == nil {
		t.Error("a RayJob was accepted")
	}
}

func workload(job string, conds map[string]bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetOwnerReferences([]metav1.OwnerReference{{Kind: "PyTorchJob", Name: job}})
	var list []any
	for typ, ok := range conds {
		status := "False"
		if ok {
			status = "True"
		}
		list = append(list, map[string]any{"type": typ, "status": status})
	}
	_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
	return u
}

func TestReadWorkload(t *testing.T) {
	cases := map[string]struct {
		conds map[string]bool
		want  WorkloadState
	}{
		"queued":          {map[string]bool{"QuotaReserved": false}, WorkloadState{Job: "j"}},
		"reserved only":   {map[string]bool{"QuotaReserved": true, "Admitted": false}, WorkloadState{Job: "j"}},
		"admitted":        {map[string]bool{"QuotaReserved": true, "Admitted": true}, WorkloadState{Job: "j", Admitted: true}},
		"evicted, queued": {map[string]bool{"Evicted": true, "Preempted": true, "Admitted": false}, WorkloadState{Job: "j"}},
		"finished":        {map[string]bool{"Admitted": true, "Finished": true}, WorkloadState{Job: "j", Finished: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ReadWorkload(workload("j", tc.conds))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestWorkloadTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	tr := newWorkloadTracker(func() time.Time { return now })
	at := func(s int, st WorkloadState) {
		now = t0.Add(time.Duration(s) * time.Second)
		tr.observe(st)
	}
	at(0, WorkloadState{Job: "a"})
	at(1, WorkloadState{Job: "a", Admitted: true})
	at(2, WorkloadState{Job: "a", Admitted: true}) // a status update that changes nothing
	at(3, WorkloadState{Job: "b"})
	at(4, WorkloadState{Job: "a"}) // evicted
	if q, r, f := tr.counts(); q != 2 || r != 0 || f != 0 {
		t.Errorf("counts %d queued, %d running, %d finished", q, r, f)
	}
	at(5, WorkloadState{Job: "b", Admitted: true})
	at(6, WorkloadState{Job: "a", Admitted: true})
	at(7, WorkloadState{Job: "a", Finished: true})
	at(8, WorkloadState{Job: "a", Finished: true})
	at(9, WorkloadState{Job: ""})
	occ, ev := tr.snapshot()
	s := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	want := map[string][]occurrence{
		"a": {{"Started", s(1)}, {"Suspended", s(4)}, {"Started", s(6)}, {"Finished", s(7)}},
		"b": {{"Started", s(5)}},
	}
	if d := cmp.Diff(want, occ, cmp.AllowUnexported(occurrence{})); d != "" {
		t.Errorf("occurrences (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]int32{"a": 1}, ev); d != "" {
		t.Errorf("evictions (-want +got):\n%s", d)
	}
	if q, r, f := tr.counts(); q != 0 || r != 1 || f != 1 {
		t.Errorf("counts %d queued, %d running, %d finished", q, r, f)
	}
	if got := tr.pending([]traces.Job{{ID: "x"}, {ID: "y"}}); len(got) != 2 {
		t.Errorf("pending %v", got)
	}
}

func TestAssembleKueue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(n int) time.Time { return start.Add(time.Duration(n) * time.Second) }
	o := Options{Name: "r", Policy: "Kueue", GPUs: 8, TimeScale: 100}
	jobs := []traces.Job{{ID: "a", GPUs: 4, Duration: 500 * time.Second}}
	occ := map[string][]occurrence{JobName(0): {{"Finished", s(12)}, {"Started", s(1)}, {"Suspended", s(4)}, {"Preempting", s(3)}, {"Started", s(6)}}}
	run, err := assemble(o, jobs, []time.Time{s(0)}, start, occ, map[string]jobCounts{JobName(0): {preemptions: 1}})
	if err != nil {
		t.Fatal(err)
	}
	j := run.Jobs[0]
	if j.FirstStart != 100*time.Second || j.Finish != 1200*time.Second || j.Held != 900*time.Second || j.Preemptions != 1 || j.SuspendDelay != 100*time.Second {
		t.Errorf("record %+v", j)
	}
	ph := sim.DefaultPhysics()
	EstimateLost(run, ph)
	if want := 400*time.Second - ph.ContainerStart - ph.WarmUp; run.Jobs[0].RedoneWork != max(0, want) {
		t.Errorf("lost %v, want %v", run.Jobs[0].RedoneWork, want)
	}
	if _, err := assemble(o, jobs, []time.Time{s(0)}, start, map[string][]occurrence{}, nil); err == nil {
		t.Error("a job without a timeline was accepted")
	}
	none := &metrics.Run{Jobs: []metrics.JobRecord{{Held: time.Hour, Service: time.Minute}}}
	EstimateLost(none, ph)
	if none.Jobs[0].RedoneWork != 0 {
		t.Error("a job never preempted lost time")
	}
}
