package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"

	"github.com/google/go-cmp/cmp"
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/internal/scheduler"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/profile"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// harness runs the operator's reconcilers and scheduling cycle by hand on a fake API server
// and a fake clock.
type harness struct {
	t     *testing.T
	c     client.Client
	clock *clocktesting.FakeClock
	conf  *configv1.Configuration
	m     *metrics.Metrics
	inbox *scheduler.Inbox
	jobs  *JobReconciler
	hs    *HandshakeReconciler
	sched *scheduler.Scheduler
}

func newHarness(t *testing.T, policy string, objs ...client.Object) *harness {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Allocation{}, &kftraining.PyTorchJob{}).Build()
	conf := &configv1.Configuration{Queues: []configv1.Queue{{Name: "default"}, {Name: "high", Priority: 100}}, Policy: configv1.Policy{Name: policy}}
	conf.Default()
	clk := clocktesting.NewFakeClock(utiltesting.Epoch)
	m := metrics.New()
	pol, err := policies.ByName(policy)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, c: c, clock: clk, conf: conf, m: m, inbox: scheduler.NewInbox()}
	h.setPolicy(pol, nil)
	h.jobs = &JobReconciler{Client: c, Reader: c, Scheme: s, Clock: clk, Config: conf, Metrics: m, Inbox: h.inbox, Integration: pytorchjob.Integration}
	h.hs = &HandshakeReconciler{Client: c, Reader: c, Clock: clk, Metrics: m, Inbox: h.inbox}
	return h
}

// setPolicy gives the harness a scheduler running pol, told of events by obs (the policy
// itself if nil and it observes).
func (h *harness) setPolicy(pol sched.Policy, obs sched.Observer) {
	h.sched = scheduler.New(scheduler.Scheduler{Client: h.c, Reader: h.c, Clock: h.clock, Config: h.conf, Metrics: h.m, Policy: pol, Observer: obs, Inbox: h.inbox})
}

func gpuNode(name string, gpus int64) *corev1.Node {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": q}},
	}
}

func (h *harness) reconcileJob(name string) {
	h.t.Helper()
	if _, err := h.jobs.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}); err != nil {
		h.t.Fatalf("job %s: %v", name, err)
	}
}

func (h *harness) handshake(job string) ctrl.Result {
	h.t.Helper()
	res, err := h.hs.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pytorchjob-" + job}})
	if err != nil {
		h.t.Fatalf("handshake %s: %v", job, err)
	}
	return res
}

// cycle runs a scheduling cycle, then what the manager's watches would run after it: the
// scheduler writes Allocations only, and each Allocation it changed is reconciled by the job
// controller (which starts an admitted job) and the handshake controller (which puts a
// preemption's checkpoint request on the pods).
func (h *harness) cycle() {
	h.t.Helper()
	ctx := context.Background()
	var before v1alpha1.AllocationList
	if err := h.c.List(ctx, &before); err != nil {
		h.t.Fatal(err)
	}
	version := map[string]string{}
	for _, a := range before.Items {
		version[a.Name] = a.ResourceVersion
	}
	if err := h.sched.Cycle(ctx); err != nil {
		h.t.Fatalf("cycle: %v", err)
	}
	var after v1alpha1.AllocationList
	if err := h.c.List(ctx, &after); err != nil {
		h.t.Fatal(err)
	}
	for _, a := range after.Items {
		if version[a.Name] == a.ResourceVersion {
			continue
		}
		h.reconcileJob(a.Spec.Job.Name)
		if _, err := h.hs.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}}); err != nil {
			h.t.Fatalf("handshake %s: %v", a.Name, err)
		}
	}
}

func (h *harness) alloc(job string) *v1alpha1.Allocation {
	h.t.Helper()
	a := &v1alpha1.Allocation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "pytorchjob-" + job}, a); err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) job(name string) *kftraining.PyTorchJob {
	h.t.Helper()
	j := &kftraining.PyTorchJob{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, j); err != nil {
		h.t.Fatal(err)
	}
	return j
}

// createPods creates a job's pods as the training-operator would, bound to the first node of
// its placement and running, as the binder and the kubelet leave them.
func (h *harness) createPods(name string) []*corev1.Pod {
	h.t.Helper()
	return h.makePods(name, true)
}

// makePods creates a job's pods as the training-operator would: running on the first node of
// its placement, or not yet bound.
func (h *harness) makePods(name string, running bool) []*corev1.Pod {
	h.t.Helper()
	j := h.job(name)
	var out []*corev1.Pod
	for rt, spec := range j.Spec.PyTorchReplicaSpecs {
		for i := range *spec.Replicas {
			p := utiltesting.MakePod(j, rt, i)
			p.Status.Phase = corev1.PodPending
			if a := h.alloc(name); running && len(a.Status.Placement) > 0 {
				p.Spec.NodeName, p.Status.Phase = a.Status.Placement[0].Node, corev1.PodRunning
			}
			if err := h.c.Create(context.Background(), p); err != nil {
				h.t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

func (h *harness) wantPhase(job string, want v1alpha1.AllocationPhase) *v1alpha1.Allocation {
	h.t.Helper()
	a := h.alloc(job)
	if a.Status.Phase != want {
		h.t.Fatalf("allocation of %s is %q, want %q (conditions %+v)", job, a.Status.Phase, want, a.Status.Conditions)
	}
	return a
}

func TestStartAndPreemptFlow(t *testing.T) {
	low := utiltesting.MakePyTorchJob("low", "ns").Master(8).Workers(1, 8).Suspend(false).Obj()
	h := newHarness(t, "kueue", gpuNode("a", 8), gpuNode("b", 8), low)

	// Submission: the Allocation is created Queued and the job is suspended.
	h.reconcileJob("low")
	h.wantPhase("low", v1alpha1.AllocationQueued)
	if !(*pytorchjob.Job)(h.job("low")).IsSuspended() {
		t.Fatal("queued job runs")
	}

	// Start: Admitted with a placement on both nodes, job unsuspended with PickyMan templates.
	h.cycle()
	a := h.wantPhase("low", v1alpha1.AllocationAdmitted)
	if got := allocation.GPUsByNode(a.Status.Placement); got["a"] != 8 || got["b"] != 8 {
		t.Fatalf("placement %v, want 8 GPUs on a and b", a.Status.Placement)
	}
	j := h.job("low")
	if (*pytorchjob.Job)(j).IsSuspended() {
		t.Fatal("admitted job is suspended")
	}
	tmpl := j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template
	if tmpl.Spec.SchedulerName != v1alpha1.SchedulerName || tmpl.Annotations[agentv1alpha1.AnnotationResumeFrom] == "" {
		t.Fatalf("template not PickyMan's: scheduler %q annotations %v", tmpl.Spec.SchedulerName, tmpl.Annotations)
	}
	pods := h.createPods("low")

	// A higher-priority job preempts it: Preempting with a request on every pod.
	high := utiltesting.MakePyTorchJob("high", "ns").Queue("high").Master(8).Obj()
	if err := h.c.Create(context.Background(), high); err != nil {
		t.Fatal(err)
	}
	h.reconcileJob("high")
	h.cycle()
	a = h.wantPhase("low", v1alpha1.AllocationPreempting)
	id := a.Status.Checkpoint.ID
	h.cycle() // a second cycle decides nothing new for the victim
	if again := h.alloc("low"); again.Status.Checkpoint.ID != id || again.Status.Preemptions != 1 {
		t.Fatalf("second cycle changed the request: %+v, preemptions %d", again.Status.Checkpoint, again.Status.Preemptions)
	}
	h.wantPhase("high", v1alpha1.AllocationQueued)

	// Waiting for acknowledgements: stays Preempting, requeued until the deadline.
	if res := h.handshake("low"); res.RequeueAfter <= 0 {
		t.Fatalf("handshake did not wait: %+v", res)
	}
	h.wantPhase("low", v1alpha1.AllocationPreempting)
	for _, p := range pods {
		cur := &corev1.Pod{}
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			t.Fatal(err)
		}
		var req agentv1alpha1.CheckpointRequest
		if err := json.Unmarshal([]byte(cur.Annotations[agentv1alpha1.AnnotationCheckpointRequest]), &req); err != nil || req.ID != id || req.Mode != agentv1alpha1.ModeNow {
			t.Fatalf("pod %s request %q, want id %s mode now", p.Name, cur.Annotations[agentv1alpha1.AnnotationCheckpointRequest], id)
		}
		ackJSON, _ := json.Marshal(agentv1alpha1.CheckpointAck{RequestID: id, Epoch: 5, Path: "/ckpt"})
		cur.Annotations[agentv1alpha1.AnnotationCheckpointAck] = string(ackJSON)
		if err := h.c.Update(context.Background(), cur); err != nil {
			t.Fatal(err)
		}
	}

	// Every pod acknowledged: Suspended, job suspended, GPUs still held while pods exist.
	h.handshake("low")
	a = h.wantPhase("low", v1alpha1.AllocationSuspended)
	if a.Status.ResumeEpoch != 5 || len(a.Status.Placement) == 0 {
		t.Fatalf("resume epoch %d placement %v, want 5 and kept", a.Status.ResumeEpoch, a.Status.Placement)
	}
	if !(*pytorchjob.Job)(h.job("low")).IsSuspended() {
		t.Fatal("acknowledged job is not suspended")
	}
	h.handshake("low")
	h.wantPhase("low", v1alpha1.AllocationSuspended)
	h.cycle()
	h.wantPhase("high", v1alpha1.AllocationQueued)

	// Pods gone: Queued again, GPUs free, the preemptor starts on them.
	for _, p := range pods {
		if err := h.c.Delete(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Step(time.Minute)
	h.handshake("low")
	a = h.wantPhase("low", v1alpha1.AllocationQueued)
	if len(a.Status.Placement) != 0 || a.Status.AttainedGPUSeconds != 16*60 {
		t.Fatalf("placement %v attained %d, want none and %d", a.Status.Placement, a.Status.AttainedGPUSeconds, 16*60)
	}
	h.cycle()
	h.wantPhase("high", v1alpha1.AllocationAdmitted)
}

func TestFinishedJobFreesGPUs(t *testing.T) {
	job := utiltesting.MakePyTorchJob("done", "ns").Master(8).Obj()
	h := newHarness(t, "fifo", gpuNode("a", 8), job)
	h.reconcileJob("done")
	h.cycle()
	h.wantPhase("done", v1alpha1.AllocationAdmitted)
	j := h.job("done")
	j.Status.Conditions = append(j.Status.Conditions, kftraining.JobCondition{Type: kftraining.JobSucceeded, Status: corev1.ConditionTrue})
	if err := h.c.Status().Update(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	h.reconcileJob("done")
	a := h.wantPhase("done", v1alpha1.AllocationFinished)
	if len(a.Status.Placement) != 0 || a.Status.Finished == nil {
		t.Fatalf("finished allocation keeps placement %v (finished %v)", a.Status.Placement, a.Status.Finished)
	}
}

// preemptLow starts job low on one 8-GPU node, with its pods running or still pending, then
// submits the higher-priority job high and runs the cycle that preempts low for it.
func preemptLow(t *testing.T, running bool) *harness {
	t.Helper()
	low := utiltesting.MakePyTorchJob("low", "ns").Master(8).Obj()
	high := utiltesting.MakePyTorchJob("high", "ns").Queue("high").Master(8).Obj()
	h := newHarness(t, "kueue", gpuNode("a", 8), low, high)
	h.reconcileJob("low")
	h.cycle()
	h.makePods("low", running)
	h.reconcileJob("high")
	h.cycle()
	return h
}

func TestDeadlineSuspendsWithoutAcks(t *testing.T) {
	h := preemptLow(t, true)
	h.wantPhase("low", v1alpha1.AllocationPreempting)
	h.handshake("low")
	h.wantPhase("low", v1alpha1.AllocationPreempting)
	h.clock.Step(h.conf.Checkpoint.NowDeadline.Duration)
	h.handshake("low")
	a := h.wantPhase("low", v1alpha1.AllocationSuspended)
	if r := condReason(a, v1alpha1.ConditionSuspended); r != "DeadlineExceeded" {
		t.Fatalf("Suspended reason %q, want DeadlineExceeded", r)
	}
}

// A job preempted before any of its pods started has trained nothing since it started: it is
// suspended at once, keeping its resume epoch, not held on its GPUs until the deadline.
func TestPreemptedBeforeItsPodsStartSuspendsAtOnce(t *testing.T) {
	h := preemptLow(t, false) // the cycle decides the preemption and runs the handshake
	a := h.wantPhase("low", v1alpha1.AllocationSuspended)
	if r := condReason(a, v1alpha1.ConditionSuspended); r != "NotStarted" || a.Status.ResumeEpoch != 0 {
		t.Fatalf("Suspended reason %q resume epoch %d, want NotStarted and 0", r, a.Status.ResumeEpoch)
	}
	if !(*pytorchjob.Job)(h.job("low")).IsSuspended() {
		t.Fatal("the preempted job is not suspended")
	}
}

func condReason(a *v1alpha1.Allocation, typ string) string {
	for _, c := range a.Status.Conditions {
		if c.Type == typ {
			return c.Reason
		}
	}
	return ""
}

func TestFinishScoresPredictionAndRecordsProfile(t *testing.T) {
	job := utiltesting.MakePyTorchJob("train", "ns").Master(4).Label(v1alpha1.LabelModel, "resnet").
		Annotation(v1alpha1.AnnotationEpochs, "10").Obj()
	h := newHarness(t, "fifo", gpuNode("a", 8), job)
	store := profile.NewMemory()
	p := profile.Profile{Model: "resnet"}
	for i, g := range []int32{1, 2, 4, 8} {
		p.Add(profile.Sample{JobID: fmt.Sprint(i), GPUs: g, EpochTime: time.Duration(40/g) * time.Minute}, 0)
	}
	if err := store.Update(p); err != nil {
		t.Fatal(err)
	}
	h.jobs.Profiles = store
	h.reconcileJob("train")
	h.cycle()
	for _, pod := range h.createPods("train") {
		pr, _ := json.Marshal(agentv1alpha1.Progress{EpochsDone: 10, EpochSeconds: 660})
		pod.Annotations[agentv1alpha1.AnnotationProgress] = string(pr)
		if err := h.c.Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodSucceeded // the training ended
		if err := h.c.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Step(110 * time.Minute) // predicted 10 x 10 min, ran 110 min: error 10/110
	j := h.job("train")
	j.Status.Conditions = append(j.Status.Conditions, kftraining.JobCondition{Type: kftraining.JobSucceeded, Status: corev1.ConditionTrue})
	if err := h.c.Status().Update(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	h.reconcileJob("train")
	h.wantPhase("train", v1alpha1.AllocationFinished)

	var m dto.Metric
	if err := h.m.PredictionError.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetHistogram().GetSampleCount(); got != 1 {
		t.Fatalf("%d predictions scored, want 1", got)
	}
	if got := m.GetHistogram().GetSampleSum(); got < 10.0/110-1e-6 || got > 10.0/110+1e-6 {
		t.Errorf("relative error %.4f, want %.4f", got, 10.0/110)
	}
	after, err := store.Get("resnet")
	if err != nil {
		t.Fatal(err)
	}
	last := after.Samples[len(after.Samples)-1]
	if last.JobID != "ns/pytorchjob-train" || last.GPUs != 4 || last.EpochTime != 11*time.Minute {
		t.Errorf("recorded sample %+v, want job ns/pytorchjob-train, 4 GPUs, 11m", last)
	}
}

// reportProgress writes pr as the progress annotation of each of pods, as their agents
// would, and runs a cycle.
func (h *harness) reportProgress(pods []*corev1.Pod, pr agentv1alpha1.Progress) {
	h.t.Helper()
	data, err := json.Marshal(pr)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, pod := range pods {
		cur := &corev1.Pod{}
		if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(pod), cur); err != nil {
			h.t.Fatal(err)
		}
		cur.Annotations[agentv1alpha1.AnnotationProgress] = string(data)
		if err := h.c.Update(context.Background(), cur); err != nil {
			h.t.Fatal(err)
		}
	}
	h.cycle()
}

type recorder struct{ events []sched.Event }

func (r *recorder) Observe(ev sched.Event) { r.events = append(r.events, ev) }

// startObserved admits job, alone on an 8-GPU node under fifo with a recorder as the
// policy's observer, and creates its pods.
func startObserved(t *testing.T, job *kftraining.PyTorchJob) (*harness, *recorder, []*corev1.Pod) {
	t.Helper()
	h := newHarness(t, "fifo", gpuNode("a", 8), job)
	rec := &recorder{}
	h.setPolicy(h.sched.Policy, rec)
	h.reconcileJob(job.Name)
	h.cycle()
	return h, rec, h.createPods(job.Name)
}

func TestObserverLearnsEpochs(t *testing.T) {
	job := utiltesting.MakePyTorchJob("train", "ns").Master(4).Obj()
	h, rec, pods := startObserved(t, job)
	report := func(done int32, bytes int64) {
		h.reportProgress(pods, agentv1alpha1.Progress{EpochsDone: done, EpochSeconds: 60, ReadBytes: bytes})
	}
	report(1, 1000)
	report(1, 1500)
	report(2, 3000)
	var kinds []sched.EventKind
	var epoch sched.Event
	for _, ev := range rec.events {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == sched.EventEpoch {
			epoch = ev
		}
	}
	want := []sched.EventKind{sched.EventSubmitted, sched.EventStarted, sched.EventEpoch}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("observed events (-want +got):\n%s", diff)
	}
	if epoch.Duration != time.Minute || epoch.Bytes != 2000 || epoch.Job.ID != "ns/pytorchjob-train" {
		t.Errorf("epoch event %v %d bytes for %s, want 1m, 2000 bytes", epoch.Duration, epoch.Bytes, epoch.Job.ID)
	}
}

// TestObserverLearnsReadRate: each newer report of the pods' read rate reaches the observer
// as traffic over the time since the previous report, so that the predictor has a live
// estimate before the job's first epoch ends; a report not newer than the last adds nothing.
func TestObserverLearnsReadRate(t *testing.T) {
	job := utiltesting.MakePyTorchJob("train", "ns").Master(2).Workers(1, 2).Obj()
	h, rec, pods := startObserved(t, job)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want a master and a worker", len(pods))
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	report := func(at time.Duration, rate float64) {
		h.reportProgress(pods, agentv1alpha1.Progress{ReadRate: rate, ReadBytes: int64(rate * at.Seconds()), Time: t0.Add(at)})
	}
	report(0, 1e6)
	report(2*time.Second, 1e6)
	report(2*time.Second, 1e6) // the same report again
	report(5*time.Second, 3e6)
	var got []sched.Event
	for _, ev := range rec.events {
		if ev.Kind == sched.EventTraffic {
			got = append(got, ev)
		}
	}
	// The job's rate is its pods' sum; the first report only sets the start.
	n := int64(len(pods))
	want := []struct {
		d     time.Duration
		bytes int64
	}{{2 * time.Second, n * 2e6}, {3 * time.Second, n * 9e6}}
	if len(got) != len(want) {
		t.Fatalf("%d traffic events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Duration != w.d || got[i].Bytes != w.bytes || got[i].Job.ID != "ns/pytorchjob-train" {
			t.Errorf("traffic event %d: %v, %d bytes for %s; want %v, %d bytes", i, got[i].Duration, got[i].Bytes, got[i].Job.ID, w.d, w.bytes)
		}
	}
}

// TestFinishedJobHoldsGPUsUntilItsPodsEnd: a job whose kind reports it finished while one of
// its placed pods still runs (a Ray worker outlives its job until KubeRay deletes the
// cluster) keeps its GPUs until the pod has ended or is gone: another job admitted onto them
// meanwhile would find the node over-committed.
func TestFinishedJobHoldsGPUsUntilItsPodsEnd(t *testing.T) {
	job := utiltesting.MakePyTorchJob("done", "ns").Master(8).Obj()
	h := newHarness(t, "fifo", gpuNode("a", 8), job)
	h.reconcileJob("done")
	h.cycle()
	h.wantPhase("done", v1alpha1.AllocationAdmitted)
	pod := utiltesting.MakePod(h.job("done"), kftraining.PyTorchJobReplicaTypeMaster, 0)
	pod.Labels[v1alpha1.LabelAllocation] = "pytorchjob-done"
	pod.Spec.NodeName, pod.Status.Phase = "a", corev1.PodRunning
	if err := h.c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	j := h.job("done")
	j.Status.Conditions = append(j.Status.Conditions, kftraining.JobCondition{Type: kftraining.JobSucceeded, Status: corev1.ConditionTrue})
	if err := h.c.Status().Update(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	res, err := h.jobs.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "done"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := h.wantPhase("done", v1alpha1.AllocationAdmitted); len(a.Status.Placement) == 0 || res.RequeueAfter == 0 {
		t.Fatalf("finished job with a running pod: placement %v, requeue %v; want the placement kept and a requeue", a.Status.Placement, res.RequeueAfter)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if err := h.c.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	h.reconcileJob("done")
	h.wantPhase("done", v1alpha1.AllocationFinished)
}
