package coord

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// podBuilder builds pods for the tests.
type podBuilder struct{ p corev1.Pod }

func makePod(name, node string) *podBuilder {
	return &podBuilder{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b *podBuilder) ann(k string, v any) *podBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	s, ok := v.(string)
	if !ok {
		raw, _ := json.Marshal(v)
		s = string(raw)
	}
	b.p.Annotations[k] = s
	return b
}
func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder { b.p.Status.Phase = p; return b }
func (b *podBuilder) obj() *corev1.Pod                    { return b.p.DeepCopy() }

func newFake(funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	b := fake.NewClientBuilder().WithObjects(objs...).
		WithIndex(&corev1.Pod{}, NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} })
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func newCoordinator(c client.Client) *Coordinator {
	co := &Coordinator{Client: c, Node: "n1", Clock: clocktesting.NewFakeClock(t0), Log: logr.Discard()}
	co.Registry = api.NewRegistry(co.Clock, co)
	return co
}

func TestSync(t *testing.T) {
	req := agentv1alpha1.CheckpointRequest{ID: "r1", Mode: agentv1alpha1.ModeBoundary}
	kube := newFake(nil,
		makePod("plain", "n1").obj(),
		makePod("asked", "n1").ann(agentv1alpha1.AnnotationCheckpointRequest, req).obj(),
		makePod("answered", "n1").ann(agentv1alpha1.AnnotationCheckpointRequest, req).
			ann(agentv1alpha1.AnnotationCheckpointAck, agentv1alpha1.CheckpointAck{RequestID: "r1"}).obj(),
		// An annotation written before elastic jobs (no sizes) still parses: sizes 0.
		makePod("resumed", "n1").ann(agentv1alpha1.AnnotationResumeFrom, `{"epoch":4,"path":"/ck/4"}`).obj(),
		// An elastic job resumed at 2 of its 4 workers.
		makePod("resized", "n1").ann(agentv1alpha1.AnnotationResumeFrom,
			`{"epoch":3,"path":"/ck/3","worldSize":2,"referenceWorldSize":4}`).obj(),
		makePod("garbled", "n1").ann(agentv1alpha1.AnnotationCheckpointRequest, `{"id":"x","mode":"later"}`).
			ann(agentv1alpha1.AnnotationResumeFrom, "{").obj(),
		makePod("finished", "n1").phase(corev1.PodSucceeded).obj(),
		makePod("elsewhere", "n2").ann(agentv1alpha1.AnnotationCheckpointRequest, req).obj(),
	)
	co := newCoordinator(kube)
	if err := co.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []api.Pod
	for _, uid := range co.Registry.PodUIDs() {
		p, _ := co.Registry.Pod(uid)
		got = append(got, p)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	pod := func(name string) api.Pod { return api.Pod{UID: "uid-" + name, Namespace: "ns", Name: name} }
	want := []api.Pod{pod("answered"), pod("asked"), pod("garbled"), pod("plain"), pod("resized"), pod("resumed")}
	want[0].Request, want[0].AckedID = &req, "r1"
	want[1].Request = &req
	want[4].Resume = agentv1alpha1.ResumePoint{Epoch: 3, Path: "/ck/3", WorldSize: 2, ReferenceWorldSize: 4}
	want[5].Resume = agentv1alpha1.ResumePoint{Epoch: 4, Path: "/ck/4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registry pods (-want +got):\n%s", diff)
	}

	// A pod that leaves the node is forgotten.
	if err := kube.Delete(context.Background(), makePod("plain", "n1").obj()); err != nil {
		t.Fatal(err)
	}
	if err := co.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := co.Registry.Pod("uid-plain"); ok {
		t.Error("deleted pod still in the registry")
	}
}

func TestAckAndProgressAreWrittenAndRetried(t *testing.T) {
	fail := 1
	funcs := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
		if fail > 0 {
			fail--
			return errors.New("apiserver unavailable")
		}
		return c.Patch(ctx, obj, p, o...)
	}}
	req := agentv1alpha1.CheckpointRequest{ID: "r1", Mode: agentv1alpha1.ModeBoundary}
	kube := newFake(funcs, makePod("a", "n1").ann(agentv1alpha1.AnnotationCheckpointRequest, req).obj())
	co := newCoordinator(kube)
	ctx := context.Background()
	if err := co.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	c := api.Caller{Session: 1, PID: 1, PodUID: "uid-a"}
	if _, err := co.Registry.Register(c, "ns/a", 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := co.Registry.CheckpointDone(c, "r1", 0, "/ck/0", 5, 1); err != nil {
		t.Fatal(err)
	}
	if err := co.Flush(ctx); err == nil {
		t.Fatal("first flush should fail")
	}
	if err := co.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "a"}, p); err != nil {
		t.Fatal(err)
	}
	var ack agentv1alpha1.CheckpointAck
	if err := json.Unmarshal([]byte(p.Annotations[agentv1alpha1.AnnotationCheckpointAck]), &ack); err != nil {
		t.Fatal(err)
	}
	want := agentv1alpha1.CheckpointAck{RequestID: "r1", Epoch: 0, Path: "/ck/0", Bytes: 5, Seconds: 1, Time: t0}
	if diff := cmp.Diff(want, ack); diff != "" {
		t.Errorf("ack (-want +got):\n%s", diff)
	}
	if _, ok := p.Annotations[agentv1alpha1.AnnotationProgress]; !ok {
		t.Error("no progress annotation")
	}
	// After an agent restart, the acknowledged request is not forwarded again.
	co2 := newCoordinator(kube)
	if err := co2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := co2.Registry.Register(c, "ns/a", 0, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := co2.Registry.Poll(ctx, c, 0); err != nil || got != nil {
		t.Errorf("poll after restart = %+v, %v; want nothing", got, err)
	}
}

func TestPublishGPULabels(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"keep": "me"}}}
	kube := newFake(nil, node)
	devs := []gpu.Device{{Product: "NVIDIA A100-SXM4-80GB", MemoryTotal: 80 << 30}, {}}
	if err := PublishGPULabels(context.Background(), kube, "n1", devs); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := kube.Get(context.Background(), types.NamespacedName{Name: "n1"}, got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"keep": "me", gpu.LabelCount: "2", gpu.LabelProduct: "NVIDIA-A100-SXM4-80GB", gpu.LabelMemory: "81920"}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// TestProgressWritesBudget: patches that carry only progress go out at ProgressWrites a
// second after a burst of ProgressBurst, the rest held back and written later with their
// newest value; an acknowledgement is never held back.
func TestProgressWritesBudget(t *testing.T) {
	var patched []string
	funcs := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
		patched = append(patched, obj.GetName())
		return c.Patch(ctx, obj, p, o...)
	}}
	var objs []client.Object
	var pods []api.Pod
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		objs = append(objs, makePod(name, "n1").obj())
		pods = append(pods, api.Pod{UID: "uid-" + name, Namespace: "ns", Name: name})
	}
	kube := newFake(funcs, objs...)
	co := newCoordinator(kube)
	co.ProgressWrites, co.ProgressBurst = 1, 2
	clk := co.Clock.(*clocktesting.FakeClock)
	ctx := context.Background()
	progress := func(p api.Pod, epoch int32) {
		co.queue(p, agentv1alpha1.AnnotationProgress, agentv1alpha1.Progress{Epoch: epoch, EpochsDone: epoch})
	}
	for _, p := range pods {
		progress(p, 1)
	}
	if err := co.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(patched) != 2 {
		t.Fatalf("first flush: %d patches (%v); want the burst of 2 written and 3 held", len(patched), patched)
	}
	// Within the same second nothing more goes out; the held progress is replaced by newer.
	for _, p := range pods {
		progress(p, 2)
	}
	if err := co.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(patched) != 2 {
		t.Fatalf("second flush in the same instant wrote %v", patched[2:])
	}
	if got := co.Coalesced(); got != 3 {
		t.Errorf("%d progress reports replaced before being written, want the 3 held", got)
	}
	// An acknowledgement goes out at once, over the budget, with the pod's queued progress.
	co.queue(pods[0], agentv1alpha1.AnnotationCheckpointAck, agentv1alpha1.CheckpointAck{RequestID: "r1"})
	if err := co.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(patched) != 3 || patched[2] != "a" {
		t.Fatalf("the acknowledgement of a was not written at once: %v", patched)
	}
	// Its patch used the budget's next token: one second later nothing goes, two seconds
	// later one, and after five more every pod's newest progress is written.
	clk.Step(time.Second)
	if err := co.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(patched) != 3 {
		t.Fatalf("one second after the acknowledgement: %v written, want nothing (the acknowledgement took the token)", patched[3:])
	}
	for range 5 {
		clk.Step(time.Second)
		if err := co.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(patched) != 7 {
		t.Fatalf("after six seconds: %d patches %v; want the 4 held pods written once each", len(patched), patched)
	}
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: "ns", Name: p.Name}, got); err != nil {
			t.Fatal(err)
		}
		var prog agentv1alpha1.Progress
		if err := json.Unmarshal([]byte(got.Annotations[agentv1alpha1.AnnotationProgress]), &prog); err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		if prog.Epoch != 2 {
			t.Errorf("pod %s: progress of epoch %d written last, want the newest (2)", p.Name, prog.Epoch)
		}
	}
}
