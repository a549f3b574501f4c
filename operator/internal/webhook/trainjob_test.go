package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
)

func rawRequest(t *testing.T, op admissionv1.Operation, ns string, obj any) admission.Request {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Namespace: ns, Object: runtime.RawExtension{Raw: raw}}}
}

func patchedPaths(resp admission.Response) map[string]bool {
	out := map[string]bool{}
	for _, p := range resp.Patches {
		out[p.Path] = true
	}
	return out
}

// The job webhooks take a TrainJob through the same adapter as the other kinds: the mutating
// one suspends it, the validating one names the TrainJob's own fields.
func TestTrainJobWebhooks(t *testing.T) {
	s := scheme(t)
	m := &Mutator{Integration: trainjob.Integration, Decoder: admission.NewDecoder(s), SocketDir: agentv1alpha1.DefaultSocketDir}
	resp := m.Handle(context.Background(), rawRequest(t, admissionv1.Create, "ns", utiltesting.MakeTrainJob("j", "ns").Nodes(2).GPUs(8).Obj()))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if got := patchedPaths(resp); len(got) != 1 || !got["/spec/suspend"] {
		t.Errorf("patches %v, want only /spec/suspend", got)
	}

	conf := &configv1.Configuration{Queues: []configv1.Queue{{Name: "default"}}}
	conf.Default()
	for _, kind := range []string{trainjob.ClusterTrainingRuntimeKind, trainjob.TrainingRuntimeKind} {
		s.AddKnownTypeWithName(trainjob.GVK.GroupVersion().WithKind(kind), &unstructured.Unstructured{})
	}
	v := &Validator{Integration: trainjob.Integration, Decoder: admission.NewDecoder(s),
		Client: fake.NewClientBuilder().WithScheme(s).WithObjects(node("a", 8, "A100"), node("b", 4, "H100"),
			utiltesting.MakeClusterTrainingRuntime("torch").NumNodes(2).GPUs(8).Obj(),
			utiltesting.MakeClusterTrainingRuntime("cpu").NumNodes(2).Obj(),
			utiltesting.MakeClusterTrainingRuntime("wide").GPUs(16).Obj()).Build(), Config: conf}
	for name, tc := range map[string]struct {
		job  *unstructured.Unstructured
		want []string
	}{
		"fits":                       {job: utiltesting.MakeTrainJob("j", "ns").Nodes(4).GPUs(8).Obj()},
		"unmanaged":                  {job: utiltesting.MakeTrainJob("j", "ns").Queue("").Obj()},
		"no numNodes, no runtime":    {job: utiltesting.MakeTrainJob("j", "ns").GPUs(8).Obj(), want: []string{"spec.runtimeRef.name", "Not found", "spec.trainer.numNodes"}},
		"no GPU limit, no runtime":   {job: utiltesting.MakeTrainJob("j", "ns").Nodes(1).Obj(), want: []string{"spec.runtimeRef.name", "Not found", "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]"}},
		"both from the runtime":      {job: utiltesting.MakeTrainJob("j", "ns").Runtime("", "torch").Obj()},
		"no GPU limit anywhere":      {job: utiltesting.MakeTrainJob("j", "ns").Runtime("", "cpu").Obj(), want: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "Required value", "ClusterTrainingRuntime cpu"}},
		"the runtime's fits no node": {job: utiltesting.MakeTrainJob("j", "ns").Runtime("", "wide").Obj(), want: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "fits on no node"}},
		"fits no node":               {job: utiltesting.MakeTrainJob("j", "ns").Nodes(1).GPUs(9).Obj(), want: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "fits on no node", "has 8 GPUs"}},
		"fits no model":              {job: utiltesting.MakeTrainJob("j", "ns").Nodes(1).GPUs(8).GPUProduct("nvidia.com/gpu.product", "H100").Obj(), want: []string{`model "H100"`, "has 4 GPUs"}},
		"unknown queue":              {job: utiltesting.MakeTrainJob("j", "ns").Queue("gold").Nodes(1).GPUs(8).Obj(), want: []string{"metadata.labels[pickyman.dev/queue]", `"gold"`}},
	} {
		t.Run(name, func(t *testing.T) {
			checkResponse(t, v.Handle(context.Background(), rawRequest(t, admissionv1.Create, "ns", tc.job)), tc.want)
		})
	}
}

// noTrainJobs is an API server that does not serve TrainJobs.
type noTrainJobs struct{ client.Reader }

func (noTrainJobs) Get(context.Context, types.NamespacedName, client.Object, ...client.GetOption) error {
	return &meta.NoKindMatchError{GroupKind: trainjob.GVK.GroupKind(), SearchedVersions: []string{"v1alpha1"}}
}

func TestTrainJobPodMutator(t *testing.T) {
	s := scheme(t)
	s.AddKnownTypeWithName(trainjob.GVK, &unstructured.Unstructured{})
	managed := utiltesting.MakeTrainJob("train", "ns").Nodes(2).GPUs(8).Obj()
	managed.SetUID("uid-train")
	unmanaged := utiltesting.MakeTrainJob("plain", "ns").Queue("").Nodes(2).GPUs(8).Obj()
	alloc := &v1alpha1.Allocation{
		ObjectMeta: metav1.ObjectMeta{Name: "trainjob-train", Namespace: "ns"},
		Spec:       v1alpha1.AllocationSpec{Job: v1alpha1.JobReference{Kind: "TrainJob", Name: "train", UID: "uid-train"}},
		Status:     v1alpha1.AllocationStatus{Phase: v1alpha1.AllocationAdmitted, ResumeEpoch: 3, ResumePath: "/ckpt/train"},
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(managed, unmanaged, alloc).Build()
	m := &TrainJobPodMutator{Decoder: admission.NewDecoder(s), Reader: reader, SocketDir: agentv1alpha1.DefaultSocketDir}

	// A node pod of a managed TrainJob becomes PickyMan's.
	resp := m.Handle(context.Background(), rawRequest(t, admissionv1.Create, "ns", utiltesting.MakeTrainJobPod(managed, 1, 7)))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	got := patchedPaths(resp)
	for _, want := range []string{"/spec/schedulerName", "/metadata/labels/pickyman.dev~1allocation", "/spec/volumes", "/spec/containers/0/volumeMounts", "/spec/containers/0/env",
		"/metadata/annotations/pickyman.dev~1resume-from"} {
		if !got[want] {
			t.Errorf("no patch of %s in %v", want, got)
		}
	}
	for _, p := range resp.Patches {
		switch p.Path {
		case "/spec/schedulerName":
			if p.Value != v1alpha1.SchedulerName {
				t.Errorf("schedulerName %v", p.Value)
			}
		case "/metadata/labels/pickyman.dev~1allocation":
			if p.Value != "trainjob-train" {
				t.Errorf("allocation label %v", p.Value)
			}
		case "/metadata/annotations/pickyman.dev~1resume-from":
			var rp agentv1alpha1.ResumePoint
			if err := json.Unmarshal([]byte(p.Value.(string)), &rp); err != nil || rp.Epoch != 3 || rp.Path != "/ckpt/train" {
				t.Errorf("resume-from %v, want epoch 3 at /ckpt/train", p.Value)
			}
		}
	}

	// Every other pod passes unchanged.
	initializer := utiltesting.MakeTrainJobPod(managed, 0, 7)
	initializer.Labels[trainjob.ReplicatedJobNameLabel] = "dataset-initializer"
	otherJobSet := utiltesting.MakeTrainJobPod(managed, 0, 7)
	otherJobSet.Labels[trainjob.JobSetNameLabel] = "not-a-trainjob"
	for name, tc := range map[string]struct {
		m   *TrainJobPodMutator
		pod *corev1.Pod
	}{
		"an initializer's pod":           {m: m, pod: initializer},
		"a pod of an unmanaged TrainJob": {m: m, pod: utiltesting.MakeTrainJobPod(unmanaged, 0, 7)},
		"a pod of a plain JobSet":        {m: m, pod: otherJobSet},
		"TrainJobs not served":           {m: &TrainJobPodMutator{Decoder: m.Decoder, Reader: noTrainJobs{}}, pod: utiltesting.MakeTrainJobPod(managed, 0, 7)},
	} {
		t.Run(name, func(t *testing.T) {
			resp := tc.m.Handle(context.Background(), rawRequest(t, admissionv1.Create, "ns", tc.pod))
			if !resp.Allowed || len(resp.Patches) != 0 {
				t.Errorf("allowed %v, patches %v; want allowed unchanged (%v)", resp.Allowed, resp.Patches, resp.Result)
			}
		})
	}
}
