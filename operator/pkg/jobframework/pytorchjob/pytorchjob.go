package pytorchjob

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// Job adapts a Kubeflow training-operator v1 PyTorchJob.
type Job kftraining.PyTorchJob

var (
	_ jobframework.GenericJob  = (*Job)(nil)
	_ jobframework.PodSetPaths = (*Job)(nil)
	_ jobframework.Elastic     = (*Job)(nil)
)

// GVK is kubeflow.org/v1 PyTorchJob.
var GVK = kftraining.GroupVersion.WithKind(kftraining.PyTorchJobKind)

// Integration registers the PyTorchJob adapter.
var Integration = jobframework.Integration{
	GVK:       GVK,
	NewObject: func() client.Object { return &kftraining.PyTorchJob{} },
	NewList:   func() client.ObjectList { return &kftraining.PyTorchJobList{} },
	Wrap: func(obj client.Object) jobframework.GenericJob {
		if j, ok := obj.(*kftraining.PyTorchJob); ok {
			return (*Job)(j)
		}
		return nil
	},
}

// Object returns the PyTorchJob.
func (j *Job) Object() client.Object { return (*kftraining.PyTorchJob)(j) }

// GVK returns kubeflow.org/v1 PyTorchJob.
func (j *Job) GVK() schema.GroupVersionKind { return GVK }

// replicaTypes returns the job's replica types: Master first, then the rest by name.
func (j *Job) replicaTypes() []kftraining.ReplicaType {
	var out []kftraining.ReplicaType
	for rt := range j.Spec.PyTorchReplicaSpecs {
		out = append(out, rt)
	}
	slices.SortFunc(out, func(a, b kftraining.ReplicaType) int {
		am, bm := a == kftraining.PyTorchJobReplicaTypeMaster, b == kftraining.PyTorchJobReplicaTypeMaster
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return strings.Compare(string(a), string(b))
	})
	return out
}

// PodSetPath returns the field path of a replica type's spec.
func (j *Job) PodSetPath(name string) *field.Path {
	return field.NewPath("spec", "pytorchReplicaSpecs").Key(name)
}

// PodSets returns one pod set per replica type, Master first. Every replica type must ask
// for GPUs through a limit on gpuResource; the errors name the field.
func (j *Job) PodSets(gpuResource, gpuProductLabel string) ([]pickymanv1.PodSet, error) {
	var errs field.ErrorList
	specs := field.NewPath("spec", "pytorchReplicaSpecs")
	if len(j.Spec.PyTorchReplicaSpecs) == 0 {
		return nil, field.ErrorList{field.Required(specs, "a PyTorchJob needs at least one replica type")}.ToAggregate()
	}
	var out []pickymanv1.PodSet
	for _, rt := range j.replicaTypes() {
		spec := j.Spec.PyTorchReplicaSpecs[rt]
		p := specs.Key(string(rt))
		if spec == nil {
			errs = append(errs, field.Required(p, "replica spec is empty"))
			continue
		}
		count := ptr.Deref(spec.Replicas, 1)
		gpus := jobframework.GPULimit(&spec.Template.Spec, corev1.ResourceName(gpuResource))
		if gpus <= 0 && count > 0 {
			errs = append(errs, field.Required(p.Child("template", "spec", "containers").Key("resources.limits").Key(gpuResource),
				"every replica of a PickyMan job needs a GPU limit"))
		}
		out = append(out, pickymanv1.PodSet{
			Name:       string(rt),
			Count:      count,
			GPUsPerPod: gpus,
			GPUModel:   spec.Template.Spec.NodeSelector[gpuProductLabel],
		})
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return out, nil
}

// PodTemplates returns the pod template of each replica type.
func (j *Job) PodTemplates() map[string]*corev1.PodTemplateSpec {
	out := make(map[string]*corev1.PodTemplateSpec, len(j.Spec.PyTorchReplicaSpecs))
	for rt, spec := range j.Spec.PyTorchReplicaSpecs {
		if spec != nil {
			out[string(rt)] = &spec.Template
		}
	}
	return out
}

// IsSuspended reports runPolicy.suspend.
func (j *Job) IsSuspended() bool { return ptr.Deref(j.Spec.RunPolicy.Suspend, false) }

// Suspend sets runPolicy.suspend.
func (j *Job) Suspend(s bool) { j.Spec.RunPolicy.Suspend = ptr.To(s) }

// Finished reports a Succeeded or Failed condition that is true.
func (j *Job) Finished() (finished, succeeded bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case kftraining.JobSucceeded:
			return true, true
		case kftraining.JobFailed:
			finished = true
		}
	}
	return finished, false
}

// PodSetOf reads the replica type and index labels the training-operator puts on pods. The
// replica-type label is the lower-cased replica type.
func (j *Job) PodSetOf(pod *corev1.Pod) (string, int32, bool) {
	rt, ok := pod.Labels[kftraining.ReplicaTypeLabel]
	if !ok || pod.Labels[kftraining.JobNameLabel] != j.Name {
		return "", 0, false
	}
	idx, err := strconv.ParseInt(pod.Labels[kftraining.ReplicaIndexLabel], 10, 32)
	if err != nil || idx < 0 {
		return "", 0, false
	}
	for name := range j.Spec.PyTorchReplicaSpecs {
		if strings.EqualFold(string(name), rt) {
			return string(name), int32(idx), true
		}
	}
	return "", 0, false
}

// PodSelector selects the pods the training-operator creates for the job.
func (j *Job) PodSelector() map[string]string {
	return map[string]string{kftraining.JobNameLabel: j.Name}
}

// ElasticBounds reads spec.elasticPolicy: a job with minReplicas < maxReplicas and a Worker
// replica type is elastic in its Worker count (torchrun's elastic min_nodes:max_nodes). The
// Worker replicas must lie within the bounds.
func (j *Job) ElasticBounds() (string, int32, int32, bool, error) {
	ep := j.Spec.ElasticPolicy
	if ep == nil || ep.MinReplicas == nil || ep.MaxReplicas == nil {
		return "", 0, 0, false, nil
	}
	lo, hi := *ep.MinReplicas, *ep.MaxReplicas
	path := field.NewPath("spec", "elasticPolicy")
	w := j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker]
	switch {
	case lo < 1 || hi < lo:
		return "", 0, 0, false, field.Invalid(path, fmt.Sprintf("%d:%d", lo, hi), "want 1 <= minReplicas <= maxReplicas")
	case w == nil:
		return "", 0, 0, false, field.Required(field.NewPath("spec", "pytorchReplicaSpecs").Key(string(kftraining.PyTorchJobReplicaTypeWorker)), "an elastic PyTorchJob changes its Worker replicas")
	case lo == hi:
		return "", 0, 0, false, nil
	}
	if n := ptr.Deref(w.Replicas, 1); n < lo || n > hi {
		return "", 0, 0, false, field.Invalid(j.PodSetPath(string(kftraining.PyTorchJobReplicaTypeWorker)).Child("replicas"), n,
			fmt.Sprintf("outside elasticPolicy's minReplicas..maxReplicas (%d..%d)", lo, hi))
	}
	return string(kftraining.PyTorchJobReplicaTypeWorker), lo, hi, true, nil
}

// SetCount sets the replicas of a replica type.
func (j *Job) SetCount(podSet string, n int32) {
	if s := j.Spec.PyTorchReplicaSpecs[kftraining.ReplicaType(podSet)]; s != nil {
		s.Replicas = ptr.To(n)
	}
}
