package trainjob

import (
	"encoding/json"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// The operator reads, suspends and resumes TrainJobs.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=get

// Job adapts a Kubeflow Trainer v2 trainer.kubeflow.org/v1alpha1 TrainJob (Trainer
// v2.0). The trainer's Go API imports JobSet, so the adapter works on the unstructured object:
// it reads the few fields it needs through the local types below and writes spec.suspend in
// place, so that every other field, known to it or not, goes back to the API server as read.
//
// The gang is the trainer's "node" job: spec.trainer.numNodes pods of the GPU limit in
// spec.trainer.resourcesPerNode. A TrainJob takes both from its training runtime unless it sets
// them, as the Trainer merges them; ResolveReferences (runtime.go) reads the runtime so that
// PodSets can do the same. The dataset and model initializers, which run before the node job
// and ask for no GPUs, stay outside the gang and go to the cluster's scheduler.
//
// A TrainJob has no pod template: the runtime's templates are copied into a JobSet by the
// trainer, and a TrainJob can change them only through spec.podSpecOverrides, which cannot set
// a scheduler name or labels. PodTemplates is therefore empty, and the operator's pod webhook
// makes the node job's pods PickyMan's as the Job controller creates them (scheduler name, the
// Allocation label, the agent's socket, the resume point); the binder then places them by
// their completion index. On suspend the trainer suspends the JobSet, whose Jobs delete their
// pods.
type Job struct {
	obj *unstructured.Unstructured
	// runtime is the training runtime's gang, once ResolveReferences has read it.
	runtime *runtimeGang
}

var (
	_ jobframework.GenericJob    = (*Job)(nil)
	_ jobframework.PodSetPaths   = (*Job)(nil)
	_ jobframework.GPULimitPaths = (*Job)(nil)
	_ jobframework.References    = (*Job)(nil)
)

// GVK is trainer.kubeflow.org/v1alpha1 TrainJob.
var GVK = schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"}

// Integration registers the TrainJob adapter. Its objects are unstructured, which
// controller-runtime's client reads from the API server rather than from the cache.
var Integration = jobframework.Integration{
	GVK: GVK,
	NewObject: func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(GVK)
		return u
	},
	NewList: func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(GVK.GroupVersion().WithKind(GVK.Kind + "List"))
		return l
	},
	Wrap: func(obj client.Object) jobframework.GenericJob {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == GVK {
			return &Job{obj: u}
		}
		return nil
	},
}

// The trainer's pod set, and the labels JobSet and the Job controller put on the pods they
// create: the JobSet is named after the TrainJob, and its replicated job "node" is the
// trainer's node job (one Job, since the trainer sets its replicas to 1, whose completion
// index is the node's rank).
const (
	TrainJobNodePodSet     = "node"
	JobSetNameLabel        = "jobset.sigs.k8s.io/jobset-name"
	ReplicatedJobNameLabel = "jobset.sigs.k8s.io/replicatedjob-name"
	jobSetJobIndexLabel    = "jobset.sigs.k8s.io/job-index"
	trainJobComplete       = "Complete"
	trainJobFailed         = "Failed"
)

// trainJobSpec mirrors the fields of a TrainJob's spec that PickyMan reads; the json names
// are the CRD's (Trainer v2.0.0).
type trainJobSpec struct {
	Trainer          *trainJobTrainer          `json:"trainer,omitempty"`
	PodSpecOverrides []trainJobPodSpecOverride `json:"podSpecOverrides,omitempty"`
	Suspend          *bool                     `json:"suspend,omitempty"`
}

type trainJobTrainer struct {
	NumNodes         *int32                       `json:"numNodes,omitempty"`
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
}

type trainJobPodSpecOverride struct {
	TargetJobs []struct {
		Name string `json:"name"`
	} `json:"targetJobs"`
	NodeSelector    map[string]string          `json:"nodeSelector,omitempty"`
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`
}

// trainJobCondition is the part of a status condition Finished reads.
type trainJobCondition struct {
	Type   string                 `json:"type"`
	Status metav1.ConditionStatus `json:"status"`
}

// Object returns the TrainJob.
func (j *Job) Object() client.Object { return j.obj }

// GVK returns trainer.kubeflow.org/v1alpha1 TrainJob.
func (j *Job) GVK() schema.GroupVersionKind { return GVK }

// decode reads the field at path into out (a local type, through its json form); a missing
// field leaves out as it is.
func (j *Job) decode(out any, path ...string) error {
	v, found, err := unstructured.NestedFieldNoCopy(j.obj.Object, path...)
	if err != nil || !found || v == nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

var (
	trainJobTrainerPath   = field.NewPath("spec", "trainer")
	trainJobOverridesPath = field.NewPath("spec", "podSpecOverrides")
)

// PodSetPath returns spec.trainer, where the node job's gang is set.
func (j *Job) PodSetPath(string) *field.Path { return trainJobTrainerPath }

// GPULimitPath returns spec.trainer.resourcesPerNode.limits[<gpu>].
func (j *Job) GPULimitPath(_, gpuResource string) *field.Path {
	return trainJobTrainerPath.Child("resourcesPerNode", "limits").Key(gpuResource)
}

// PodSets returns the node job: spec.trainer.numNodes pods of the GPU limit in
// spec.trainer.resourcesPerNode, of the GPU model a pod-spec override of the node job selects
// (nodeSelector on the product label). What the TrainJob does not set comes from its training
// runtime, which ResolveReferences must have read. A scheduling gate on the node job is
// rejected: the binder cannot bind a gated pod.
func (j *Job) PodSets(gpuResource, gpuProductLabel string) ([]pickymanv1.PodSet, error) {
	var spec trainJobSpec
	if err := j.decode(&spec, "spec"); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), "", err.Error())}.ToAggregate()
	}
	var errs field.ErrorList
	t := trainJobTrainer{}
	if spec.Trainer != nil {
		t = *spec.Trainer
	}
	count := int32(0)
	switch {
	case t.NumNodes != nil && *t.NumNodes < 1:
		errs = append(errs, field.Invalid(trainJobTrainerPath.Child("numNodes"), *t.NumNodes, "a PickyMan TrainJob needs at least one node"))
	case t.NumNodes != nil:
		count = *t.NumNodes
	default:
		g, err := j.fromRuntime(trainJobTrainerPath.Child("numNodes"))
		if err != nil {
			errs = append(errs, err)
		} else if count = g.numNodes; count < 1 {
			errs = append(errs, field.Invalid(trainJobTrainerPath.Child("numNodes"), count,
				fmt.Sprintf("unset, and %s %s gives the node job %d nodes: a PickyMan TrainJob needs at least one", g.kind, g.name, count)))
		}
	}
	// The Trainer replaces the node container's resources by resourcesPerNode when that sets
	// limits or requests; only then are the runtime's limits gone.
	limits, own := corev1.ResourceList(nil), false
	if r := t.ResourcesPerNode; r != nil && (r.Limits != nil || r.Requests != nil) {
		limits, own = r.Limits, true
	} else if g, err := j.fromRuntime(j.GPULimitPath(TrainJobNodePodSet, gpuResource)); err != nil {
		errs = append(errs, err)
	} else {
		limits = g.limits
	}
	gpus := int32(0)
	if q, ok := limits[corev1.ResourceName(gpuResource)]; ok {
		gpus = int32(q.Value())
	}
	if gpus <= 0 && (own || j.runtime != nil && j.runtime.found) {
		msg := "every node of a PickyMan TrainJob needs a GPU limit"
		if !own {
			msg += fmt.Sprintf(": neither the TrainJob nor the node container of %s %s sets one", j.runtime.kind, j.runtime.name)
		}
		errs = append(errs, field.Required(j.GPULimitPath(TrainJobNodePodSet, gpuResource), msg))
	}
	model := ""
	for i, o := range spec.PodSpecOverrides {
		if !o.targets(TrainJobNodePodSet) {
			continue
		}
		if len(o.SchedulingGates) > 0 {
			errs = append(errs, field.Forbidden(trainJobOverridesPath.Index(i).Child("schedulingGates"),
				"PickyMan binds the node pods itself, and a pod with a scheduling gate cannot be bound"))
		}
		if m := o.NodeSelector[gpuProductLabel]; m != "" {
			model = m
		}
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return []pickymanv1.PodSet{{Name: TrainJobNodePodSet, Count: count, GPUsPerPod: gpus, GPUModel: model}}, nil
}

func (o *trainJobPodSpecOverride) targets(job string) bool {
	for _, t := range o.TargetJobs {
		if t.Name == job {
			return true
		}
	}
	return false
}

// PodTemplates returns no templates: a TrainJob has none (see TrainJob). The operator's pod
// webhook gives the node job's pods what the other kinds get through their templates.
func (j *Job) PodTemplates() map[string]*corev1.PodTemplateSpec {
	return map[string]*corev1.PodTemplateSpec{}
}

// IsSuspended reports spec.suspend.
func (j *Job) IsSuspended() bool {
	s, _, _ := unstructured.NestedBool(j.obj.Object, "spec", "suspend")
	return s
}

// Suspend sets spec.suspend.
func (j *Job) Suspend(s bool) {
	if j.obj.Object == nil {
		j.obj.Object = map[string]any{}
	}
	// Fails only when spec is not an object, which the API server never returns.
	_ = unstructured.SetNestedField(j.obj.Object, s, "spec", "suspend")
}

// Finished reports the condition Complete (succeeded) or Failed, true, that the trainer sets
// from its JobSet's.
func (j *Job) Finished() (finished, succeeded bool) {
	var conds []trainJobCondition
	if err := j.decode(&conds, "status", "conditions"); err != nil {
		return false, false
	}
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case trainJobComplete:
			return true, true
		case trainJobFailed:
			return true, false
		}
	}
	return false, false
}

// PodSetOf maps a pod of the TrainJob's node job to the pod set "node" and the pod's
// completion index (the node's rank), which the Job controller puts on the pod as a label
// (Kubernetes 1.28 and later) and an annotation. A node pod without an index, or of a second
// Job of the replicated job (which the trainer does not create), gets AnyIndex.
func (j *Job) PodSetOf(pod *corev1.Pod) (string, int32, bool) {
	if pod.Labels[JobSetNameLabel] != j.obj.GetName() || pod.Labels[ReplicatedJobNameLabel] != TrainJobNodePodSet {
		return "", 0, false
	}
	if a, ok := pod.Labels[pickymanv1.LabelAllocation]; ok && a != jobframework.AllocationName(GVK.Kind, j.obj.GetName()) {
		return "", 0, false
	}
	if ji, ok := pod.Labels[jobSetJobIndexLabel]; ok && ji != "0" {
		return TrainJobNodePodSet, jobframework.AnyIndex, true
	}
	v, ok := pod.Labels[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return TrainJobNodePodSet, jobframework.AnyIndex, true
	}
	idx, err := strconv.ParseInt(v, 10, 32)
	if err != nil || idx < 0 {
		return TrainJobNodePodSet, jobframework.AnyIndex, true
	}
	return TrainJobNodePodSet, int32(idx), true
}

// PodSelector selects the pods of the TrainJob's JobSet, which is named after it (the
// initializers' pods too; the gang's are those of the replicated job "node").
func (j *Job) PodSelector() map[string]string {
	return map[string]string{JobSetNameLabel: j.obj.GetName()}
}
