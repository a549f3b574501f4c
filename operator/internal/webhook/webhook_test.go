package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kftraining.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func request(t *testing.T, op admissionv1.Operation, obj, old *kftraining.PyTorchJob) admission.Request {
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Object: runtime.RawExtension{Raw: raw}}}
	if old != nil {
		oraw, _ := json.Marshal(old)
		req.OldObject = runtime.RawExtension{Raw: oraw}
	}
	return req
}

func node(name string, gpus int64, product string) *corev1.Node {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nvidia.com/gpu.product": product}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": q}}}
}

func validator(t *testing.T, objs ...client.Object) *Validator {
	s := scheme(t)
	conf := &configv1.Configuration{Queues: []configv1.Queue{{Name: "default"}, {Name: "high"}, {Name: "team-a", Priority: 100, Namespaces: []string{"a", "a-dev"}}}}
	conf.Default()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
	return &Validator{Integration: pytorchjob.Integration, Decoder: admission.NewDecoder(s), Client: c, Config: conf}
}

// checkResponse fails unless resp allows the request (want empty) or denies it with a
// message containing every string of want.
func checkResponse(t *testing.T, resp admission.Response, want []string) {
	t.Helper()
	if len(want) == 0 {
		if !resp.Allowed {
			t.Fatalf("denied: %s", resp.Result.Message)
		}
		return
	}
	if resp.Allowed {
		t.Fatal("allowed, want denied")
	}
	for _, w := range want {
		if !strings.Contains(resp.Result.Message, w) {
			t.Errorf("denial %q does not contain %q", resp.Result.Message, w)
		}
	}
}

func TestValidateCreate(t *testing.T) {
	v := validator(t, node("a", 8, "A100"), node("b", 4, "H100"))
	cases := map[string]struct {
		job  *kftraining.PyTorchJob
		want []string // substrings of the denial; none means allowed
	}{
		"fits":           {job: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(3, 8).Obj()},
		"unmanaged":      {job: utiltesting.MakePyTorchJob("j", "ns").Queue("").Workers(1, -1).Obj()},
		"no gpu limit":   {job: utiltesting.MakePyTorchJob("j", "ns").Workers(1, -1).Obj(), want: []string{"spec.pytorchReplicaSpecs[Worker]", "GPU limit"}},
		"unknown queue":  {job: utiltesting.MakePyTorchJob("j", "ns").Queue("gold").Obj(), want: []string{"metadata.labels[pickyman.dev/queue]", `"gold"`, `"default"`}},
		"fits no node":   {job: utiltesting.MakePyTorchJob("j", "ns").Master(9).Obj(), want: []string{"spec.pytorchReplicaSpecs[Master]", "fits on no node", "has 8 GPUs"}},
		"fits no model":  {job: utiltesting.MakePyTorchJob("j", "ns").Master(8).GPUProduct("nvidia.com/gpu.product", "H100").Obj(), want: []string{`model "H100"`, "has 4 GPUs"}},
		"uneven gang":    {job: utiltesting.MakePyTorchJob("j", "ns").Master(1).Workers(2, 4).Obj(), want: []string{"one GPU count"}},
		"bad annotation": {job: utiltesting.MakePyTorchJob("j", "ns").Annotation(v1alpha1.AnnotationEpochs, "x").Obj(), want: []string{v1alpha1.AnnotationEpochs}},
		"queue of other namespaces": {job: utiltesting.MakePyTorchJob("j", "ns").Queue("team-a").Obj(),
			want: []string{"metadata.labels[pickyman.dev/queue]", `queue "team-a" takes jobs only from the namespaces a, a-dev, not from "ns"`}},
		"queue of its namespace": {job: utiltesting.MakePyTorchJob("j", "a-dev").Queue("team-a").Master(8).Obj()},
		"forged progress in a template": {job: func() *kftraining.PyTorchJob {
			j := utiltesting.MakePyTorchJob("j", "ns").Master(8).Obj()
			j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template.Annotations = map[string]string{agentv1alpha1.AnnotationProgress: `{"epochsDone":99}`}
			return j
		}(), want: []string{"spec.pytorchReplicaSpecs[Master].template.metadata.annotations[pickyman.dev/progress]", "only the node agent and the operator write it"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkResponse(t, v.Handle(context.Background(), request(t, admissionv1.Create, tc.job, nil)), tc.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	base := utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8)
	admitted := &v1alpha1.Allocation{ObjectMeta: metav1.ObjectMeta{Name: "pytorchjob-j", Namespace: "ns"},
		Status: v1alpha1.AllocationStatus{Phase: v1alpha1.AllocationAdmitted, FirstAdmitted: &metav1.Time{}}}
	queued := admitted.DeepCopy()
	queued.Status = v1alpha1.AllocationStatus{Phase: v1alpha1.AllocationQueued}
	cases := map[string]struct {
		alloc   *v1alpha1.Allocation
		new     *kftraining.PyTorchJob
		allowed bool
	}{
		"admitted: suspend toggles":                   {alloc: admitted, new: base.Obj(), allowed: true},
		"admitted: more workers":                      {alloc: admitted, new: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(2, 8).Obj()},
		"admitted: other queue":                       {alloc: admitted, new: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Queue("high").Obj()},
		"never admitted: reshape ok":                  {alloc: queued, new: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(2, 8).Obj(), allowed: true},
		"never admitted: other queue":                 {alloc: queued, new: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Queue("high").Obj(), allowed: true},
		"never admitted: a queue of other namespaces": {alloc: queued, new: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Queue("team-a").Obj()},
		"never admitted: an unknown queue":            {alloc: queued, new: utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Queue("gold").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := validator(t, node("a", 8, "A100"), tc.alloc)
			resp := v.Handle(context.Background(), request(t, admissionv1.Update, tc.new, base.Obj()))
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
		})
	}

	// The informer cache may not hold the admission yet: the API server's word decides
	// before a change of shape or queue is let through.
	t.Run("admitted, cache behind", func(t *testing.T) {
		v := validator(t, node("a", 8, "A100"), queued)
		v.Reader = fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(admitted.DeepCopy()).WithStatusSubresource(&v1alpha1.Allocation{}).Build()
		for name, job := range map[string]*kftraining.PyTorchJob{
			"more workers": utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(2, 8).Obj(),
			"other queue":  utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Queue("high").Obj(),
		} {
			t.Run(name, func(t *testing.T) {
				checkResponse(t, v.Handle(context.Background(), request(t, admissionv1.Update, job, base.Obj())), []string{"admitted job cannot change"})
			})
		}
	})
}

func TestMutateCreate(t *testing.T) {
	m := &Mutator{Integration: pytorchjob.Integration, Decoder: admission.NewDecoder(scheme(t)), SocketDir: agentv1alpha1.DefaultSocketDir}
	job := utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Suspend(false).Obj()
	resp := m.Handle(context.Background(), request(t, admissionv1.Create, job, nil))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	paths := map[string]bool{}
	for _, p := range resp.Patches {
		paths[p.Path] = true
	}
	for _, want := range []string{
		"/spec/runPolicy/suspend",
		"/spec/pytorchReplicaSpecs/Master/template/spec/schedulerName",
		"/spec/pytorchReplicaSpecs/Worker/template/spec/volumes",
		"/spec/pytorchReplicaSpecs/Worker/template/metadata/labels",
	} {
		if !paths[want] {
			t.Errorf("no patch of %s in %v", want, paths)
		}
	}
	unmanaged := m.Handle(context.Background(), request(t, admissionv1.Create, utiltesting.MakePyTorchJob("u", "ns").Queue("").Obj(), nil))
	if !unmanaged.Allowed || len(unmanaged.Patches) != 0 {
		t.Errorf("unmanaged job patched: %v", unmanaged.Patches)
	}
}

// An update of a managed job may not take from its pod templates what makes them PickyMan's,
// nor may anyone but the operator suspend or resume it; each refusal names the field.
func TestValidateUpdateKeepsTemplatesAndSuspend(t *testing.T) {
	const operator = "system:serviceaccount:pickyman-system:pickyman-operator"
	mutated := func() *kftraining.PyTorchJob {
		j := utiltesting.MakePyTorchJob("j", "ns").Master(8).Workers(1, 8).Obj()
		j.Spec.RunPolicy.Suspend = ptr.To(true)
		jobframework.MutateTemplates((*pytorchjob.Job)(j), "pytorchjob-j", agentv1alpha1.DefaultSocketDir, "")
		return j
	}
	worker := func(j *kftraining.PyTorchJob) *corev1.PodTemplateSpec {
		return &j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Template
	}
	edit := func(f func(j *kftraining.PyTorchJob)) *kftraining.PyTorchJob { j := mutated(); f(j); return j }
	w := "spec.pytorchReplicaSpecs[Worker].template."
	cases := map[string]struct {
		old, new *kftraining.PyTorchJob
		user     string
		want     []string // substrings of the denial; none means allowed
	}{
		"unchanged": {new: mutated()},
		"another scheduler": {new: edit(func(j *kftraining.PyTorchJob) { worker(j).Spec.SchedulerName = "default-scheduler" }),
			want: []string{w + "spec.schedulerName", `must stay "pickyman"`}},
		"another Allocation label": {new: edit(func(j *kftraining.PyTorchJob) { worker(j).Labels[v1alpha1.LabelAllocation] = "pytorchjob-other" }),
			want: []string{w + "metadata.labels[pickyman.dev/allocation]", `"pytorchjob-j"`}},
		"the socket mounted read-write": {new: edit(func(j *kftraining.PyTorchJob) {
			for k := range worker(j).Spec.Containers[0].VolumeMounts {
				worker(j).Spec.Containers[0].VolumeMounts[k].ReadOnly = false
			}
		}), want: []string{w + "spec.containers[0].volumeMounts[", "read-only"}},
		"the socket volume pointed elsewhere": {new: edit(func(j *kftraining.PyTorchJob) {
			for k := range worker(j).Spec.Volumes {
				if h := worker(j).Spec.Volumes[k].HostPath; h != nil {
					h.Path = "/"
				}
			}
		}), want: []string{w + "spec.volumes[", "the host directory /var/run/pickyman"}},
		"the socket volume removed": {new: edit(func(j *kftraining.PyTorchJob) { worker(j).Spec.Volumes = nil }),
			want: []string{w + "spec.volumes", "removed"}},
		"the agent's uid removed": {new: edit(func(j *kftraining.PyTorchJob) {
			worker(j).Spec.Containers[0].Env = slices.DeleteFunc(worker(j).Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == agentv1alpha1.EnvAgentUID })
		}), want: []string{w + "spec.containers[0].env", agentv1alpha1.EnvAgentUID}},
		"a job that never had the agent's uid": {
			old: edit(func(j *kftraining.PyTorchJob) {
				worker(j).Spec.Containers[0].Env = slices.DeleteFunc(worker(j).Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == agentv1alpha1.EnvAgentUID })
			}),
			new: edit(func(j *kftraining.PyTorchJob) {
				worker(j).Spec.Containers[0].Env = slices.DeleteFunc(worker(j).Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == agentv1alpha1.EnvAgentUID })
				j.Annotations = map[string]string{"note": "x"}
			})},
		"a user resumes it": {new: edit(func(j *kftraining.PyTorchJob) { j.Spec.RunPolicy.Suspend = ptr.To(false) }), user: "alice",
			want: []string{"spec.runPolicy.suspend", "only PickyMan suspends and resumes", `"alice"`}},
		"the operator resumes it": {new: edit(func(j *kftraining.PyTorchJob) { j.Spec.RunPolicy.Suspend = ptr.To(false) }), user: operator},
		"a user suspends a running one": {old: edit(func(j *kftraining.PyTorchJob) { j.Spec.RunPolicy.Suspend = ptr.To(false) }), new: mutated(), user: "alice",
			want: []string{"spec.runPolicy.suspend"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := validator(t, node("a", 8, "A100"))
			v.Operator = func(context.Context) (string, error) { return operator, nil }
			old := tc.old
			if old == nil {
				old = mutated()
			}
			req := request(t, admissionv1.Update, tc.new, old)
			req.UserInfo.Username = tc.user
			checkResponse(t, v.Handle(context.Background(), req), tc.want)
		})
	}
}
