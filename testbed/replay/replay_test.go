package replay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/policies/pickyman"
	"github.com/pickyman/pickyman/operator/pkg/policies/tiresias"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

func traceJob(id string, workers, per int32) traces.Job {
	return traces.Job{ID: id, Workers: workers, GPUsPerWorker: per, GPUs: workers * per, Duration: time.Hour,
		Queue: "VC 7/a", Priority: 10, Model: "ResNet50", Epochs: 10, EpochTime: 6 * time.Minute,
		DatasetBytes: 1e11, CheckpointBytes: 1e9, GPUModel: "V100", Line: 3}
}

func TestBuildJob(t *testing.T) {
	pj, err := BuildJob(traceJob("job-1", 3, 4), "t00001", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	specs := pj.Spec.PyTorchReplicaSpecs
	if got := *specs[kftraining.PyTorchJobReplicaTypeMaster].Replicas + *specs[kftraining.PyTorchJobReplicaTypeWorker].Replicas; got != 3 {
		t.Errorf("pods = %d, want 3 (a master and 2 workers)", got)
	}
	for rt, r := range specs {
		tmpl := r.Template
		q := tmpl.Spec.Containers[0].Resources.Limits[cluster.GPUResource]
		if q.Value() != 4 {
			t.Errorf("%s: %d GPUs, want 4", rt, q.Value())
		}
		want := map[string]string{AnnotationSimEpochTime: "6m0s", pickymanv1.AnnotationEpochs: "10",
			pickymanv1.AnnotationDatasetBytes: "100000000000", pickymanv1.AnnotationCheckpointBytes: "1000000000"}
		if d := cmp.Diff(want, tmpl.Annotations); d != "" {
			t.Errorf("%s annotations (-want +got):\n%s", rt, d)
		}
		if got := tmpl.Spec.NodeSelector[cluster.LabelGPUProduct]; got != "Tesla-V100-SXM2-32GB" {
			t.Errorf("%s: GPU product selector %q", rt, got)
		}
		if tmpl.Spec.PriorityClassName != "pickyman-replay-10" {
			t.Errorf("%s: priority class %q", rt, tmpl.Spec.PriorityClassName)
		}
	}
	if d := cmp.Diff(map[string]string{pickymanv1.LabelQueue: "vc-7-a", pickymanv1.LabelModel: "resnet50", LabelReplay: "r1"}, pj.Labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if pj.Annotations[AnnotationTraceID] != "job-1" {
		t.Errorf("trace id %q", pj.Annotations[AnnotationTraceID])
	}
	single, err := BuildJob(traceJob("job-2", 1, 8), "t00002", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := single.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker]; ok {
		t.Errorf("a one-worker job got a Worker replica type")
	}

	bad := traceJob("job-3", 1, 8)
	bad.Epochs = 0
	if _, err := BuildJob(bad, "t00003", "ns", "r1"); err == nil || !strings.Contains(err.Error(), "job-3 (line 3)") {
		t.Errorf("a job without epochs: err %v, want one naming the trace job and line", err)
	}
}

func TestOperatorConfigIsValid(t *testing.T) {
	jobs := []traces.Job{traceJob("a", 1, 1), traceJob("b", 1, 1)}
	jobs[1].Queue = ""
	for _, p := range []string{"fifo", "tiresias", "pickyman"} {
		c := OperatorConfig(p, jobs, 100)
		if errs := c.Validate(policies.Validate); len(errs) > 0 {
			t.Errorf("%s: %v", p, errs.ToAggregate())
		}
		pol, err := policies.New(c.Policy, policies.Options{Protection: &c.Protection, Overhead: &c.Overhead})
		if err != nil {
			t.Errorf("%s: policy %+v: %v", p, c.Policy, err)
		}
		// The policy's time constants are the trace-time defaults in real time (1 h / 100).
		switch pol := pol.(type) {
		case *pickyman.Policy:
			if o := pol.Options(); o.Unknown != 36*time.Second || o.Promote != 36*time.Second || o.Refresh != 0 || o.Protect != 6*time.Second {
				t.Errorf("%s: unknown %v, promote %v, refresh %v, protect %v: want 36s, 36s, 0 (off), 6s", p, o.Unknown, o.Promote, o.Refresh, o.Protect)
			}
		case *tiresias.Tiresias:
			if th := c.Policy.Tiresias.Thresholds; len(th) != 1 || th[0].Duration != 36*time.Second {
				t.Errorf("%s: thresholds %v, want [36s]", p, th)
			}
		}
		if got := c.Overhead.ContainerStart.Duration; got != 200*time.Millisecond {
			t.Errorf("%s: container start %v, want 20 s / 100", p, got)
		}
		if d := cmp.Diff([]string{"default", "vc-7-a"}, []string{c.Queues[0].Name, c.Queues[1].Name}); d != "" || len(c.Queues) != 2 {
			t.Errorf("%s: queues %v", p, c.Queues)
		}
	}
}

// TestTimelines reads a job that was preempted once from the operator's events, at time
// scale 60: one real second is a trace minute.
func TestTimelines(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec float64) metav1.MicroTime {
		return metav1.NewMicroTime(start.Add(time.Duration(sec * float64(time.Second))))
	}
	ev := func(name, reason string, sec float64) *eventsv1.Event {
		return &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s.%s.%v", name, reason, sec)},
			Regarding:  corev1.ObjectReference{Kind: "PyTorchJob", Name: name},
			Reason:     reason, EventTime: at(sec),
		}
	}
	kube := kubefake.NewClientset(ev("t00000", "Queued", 1), ev("t00000", "Started", 2), ev("t00000", "Preempting", 10),
		ev("t00000", "Suspended", 12), ev("t00000", "Started", 20), ev("t00000", "Finished", 30))
	s := runtime.NewScheme()
	if err := pickymanv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	a := &pickymanv1.Allocation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pytorchjob-t00000"},
		Spec: pickymanv1.AllocationSpec{Job: pickymanv1.JobReference{Name: "t00000"}}}
	a.Status.Preemptions = 1
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(a).WithStatusSubresource(a).Build()
	if err := c.Status().Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	jobs := []traces.Job{traceJob("job-1", 1, 8)}
	run, err := timelines(context.Background(), Clients{Client: c, Kube: kube}, Options{Namespace: "ns", Policy: "fifo", GPUs: 8, TimeScale: 60},
		jobs, []time.Time{start.Add(time.Second)}, start)
	if err != nil {
		t.Fatal(err)
	}
	want := []metrics.JobRecord{{ID: "job-1", GPUs: 8, Submit: time.Minute, FirstStart: 2 * time.Minute, Finish: 30 * time.Minute,
		Service: time.Hour, Held: 10*time.Minute + 10*time.Minute, Preemptions: 1, SuspendDelay: 2 * time.Minute}}
	if d := cmp.Diff(want, run.Jobs); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	if run.Policy != "fifo (cluster)" || len(run.Series) == 0 {
		t.Errorf("run %q with %d series points", run.Policy, len(run.Series))
	}

	// A job without a Finished event is an error, not a silently short run.
	kube = kubefake.NewClientset(ev("t00000", "Started", 2))
	if _, err := timelines(context.Background(), Clients{Client: c, Kube: kube}, Options{Namespace: "ns", TimeScale: 60},
		jobs, []time.Time{start}, start); err == nil {
		t.Errorf("a job with no Finished event: no error")
	}

	// An operator killed before its event recorder flushed loses the Started event; the
	// Allocation's first admission stands in for it (and its Finished time for a lost
	// Finished event).
	first, done := metav1.NewTime(start.Add(3*time.Second)), metav1.NewTime(start.Add(40*time.Second))
	a.Status.FirstAdmitted, a.Status.Finished = &first, &done
	if err := c.Status().Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	kube = kubefake.NewClientset(ev("t00000", "Queued", 1))
	run, err = timelines(context.Background(), Clients{Client: c, Kube: kube}, Options{Namespace: "ns", TimeScale: 60},
		jobs, []time.Time{start.Add(time.Second)}, start)
	if err != nil {
		t.Fatalf("events lost, Allocation complete: %v", err)
	}
	want = []metrics.JobRecord{{ID: "job-1", GPUs: 8, Submit: time.Minute, FirstStart: 3 * time.Minute, Finish: 40 * time.Minute,
		Service: time.Hour, Held: 37 * time.Minute, Preemptions: 1}}
	if d := cmp.Diff(want, run.Jobs); d != "" {
		t.Errorf("records from the Allocation (-want +got):\n%s", d)
	}
}

var _ client.Object = (*pickymanv1.Allocation)(nil)

func TestStuckNamesEveryUnfinishedJob(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	alloc := func(job string, phase pickymanv1.AllocationPhase) pickymanv1.Allocation {
		a := pickymanv1.Allocation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pytorchjob-" + job, CreationTimestamp: at},
			Spec: pickymanv1.AllocationSpec{Job: pickymanv1.JobReference{Name: job}}}
		a.Status.Phase = phase
		a.Status.Conditions = []metav1.Condition{{Type: string(phase), Status: metav1.ConditionTrue, LastTransitionTime: at}}
		return a
	}
	jobs := []traces.Job{traceJob("job-a", 1, 1), traceJob("job-b", 1, 1), traceJob("job-c", 1, 1)}
	err := stuck([]pickymanv1.Allocation{alloc("t00000", pickymanv1.AllocationFinished), alloc("t00001", pickymanv1.AllocationQueued),
		alloc("t00002", pickymanv1.AllocationPreempting)}, 4*time.Minute, Options{Components: func() string { return "operator NOT RUNNING\n" }}, jobs)
	msg := err.Error()
	for _, want := range []string{"no job changed phase for 4m0s", "2 jobs not finished", "ns/t00001 (trace job job-b): Queued since 2026-01-01T12:00:00Z",
		"ns/t00002 (trace job job-c): Preempting", "operator NOT RUNNING"} {
		if !strings.Contains(msg, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "t00000") {
		t.Errorf("diagnosis names a finished job:\n%s", msg)
	}
}

// TestDeclareEstimate: a trace run time becomes the job's declared estimate in real time,
// rounded up to whole seconds, so that no job declares none.
func TestDeclareEstimate(t *testing.T) {
	for _, tc := range []struct {
		run   time.Duration
		scale float64
		want  string
	}{
		{run: 100 * time.Second, scale: 20, want: "5s"},
		{run: 101 * time.Second, scale: 20, want: "6s"},
		{run: 10 * time.Second, scale: 20, want: "1s"},
		{run: 2 * time.Hour, scale: 1, want: "2h0m0s"},
	} {
		j := traces.Job{ID: "j", Workers: 1, GPUsPerWorker: 1, GPUs: 1, Epochs: 1, EpochTime: tc.run, Duration: tc.run}
		obj, err := BuildJob(j, "t0", "ns", "r")
		if err != nil {
			t.Fatal(err)
		}
		DeclareEstimate(obj, tc.run, tc.scale)
		if got := obj.Annotations[pickymanv1.AnnotationEstimate]; got != tc.want {
			t.Errorf("run %v at scale %g: estimate %q, want %q", tc.run, tc.scale, got, tc.want)
		}
		if obj.Annotations[AnnotationTraceID] != "j" {
			t.Errorf("the estimate replaced the job's other annotations: %v", obj.Annotations)
		}
	}
}
