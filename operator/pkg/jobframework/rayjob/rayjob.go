package rayjob

import (
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// Job adapts a KubeRay ray.io/v1 RayJob. Its gang is the RayCluster the job creates: the
// head, when it asks for GPUs, and every worker group (replicas x numOfHosts pods each). A
// head without GPUs is left out of the gang and to the cluster's default scheduler.
//
// On suspend KubeRay deletes the RayCluster (and the submitter) and does not stop Ray
// gracefully: the operator's checkpoint handshake runs first, with the agent on each GPU
// pod, so the pods are deleted only once the training has checkpointed.
type Job rayv1.RayJob

var (
	_ jobframework.GenericJob  = (*Job)(nil)
	_ jobframework.PodSetPaths = (*Job)(nil)
)

// GVK is ray.io/v1 RayJob.
var GVK = rayv1.GroupVersion.WithKind("RayJob")

// Integration registers the RayJob adapter.
var Integration = jobframework.Integration{
	GVK:       GVK,
	NewObject: func() client.Object { return &rayv1.RayJob{} },
	NewList:   func() client.ObjectList { return &rayv1.RayJobList{} },
	Wrap: func(obj client.Object) jobframework.GenericJob {
		if j, ok := obj.(*rayv1.RayJob); ok {
			return (*Job)(j)
		}
		return nil
	},
}

// Pod-set name of the head group, and the labels KubeRay puts on the pods it creates.
const (
	RayHeadPodSet       = "head"
	rayNodeTypeLabel    = "ray.io/node-type"
	rayNodeGroupLabel   = "ray.io/group"
	rayNodeTypeHead     = string(rayv1.HeadNode)
	rayNodeTypeWorker   = string(rayv1.WorkerNode)
	rayHeadGroupNameKey = "headgroup"
)

// Object returns the RayJob.
func (j *Job) Object() client.Object { return (*rayv1.RayJob)(j) }

// GVK returns ray.io/v1 RayJob.
func (j *Job) GVK() schema.GroupVersionKind { return GVK }

var rayClusterSpecPath = field.NewPath("spec", "rayClusterSpec")

// PodSetPath returns the field path of a pod set's group in the RayJob.
func (j *Job) PodSetPath(name string) *field.Path {
	if name == RayHeadPodSet {
		return rayClusterSpecPath.Child("headGroupSpec")
	}
	if c := j.Spec.RayClusterSpec; c != nil {
		for i := range c.WorkerGroupSpecs {
			if c.WorkerGroupSpecs[i].GroupName == name {
				return rayClusterSpecPath.Child("workerGroupSpecs").Index(i)
			}
		}
	}
	return rayClusterSpecPath
}

// PodSets returns the head (when it asks for an accelerator: a limit on a */gpu resource) and one pod set per worker group, in the
// order of spec.rayClusterSpec.workerGroupSpecs. A job that runs on an existing cluster
// (clusterSelector) or that lets Ray's autoscaler change its size has no fixed gang and is
// rejected, as is a worker group without a GPU limit.
func (j *Job) PodSets(gpuResource, gpuProductLabel string) ([]pickymanv1.PodSet, error) {
	var errs field.ErrorList
	if len(j.Spec.ClusterSelector) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "clusterSelector"),
			"a PickyMan RayJob brings its own RayCluster (rayClusterSpec); running on an existing cluster is not supported"))
	}
	c := j.Spec.RayClusterSpec
	if c == nil {
		errs = append(errs, field.Required(rayClusterSpecPath, "a PickyMan RayJob needs a rayClusterSpec"))
		return nil, errs.ToAggregate()
	}
	if ptr.Deref(c.EnableInTreeAutoscaling, false) {
		errs = append(errs, field.Forbidden(rayClusterSpecPath.Child("enableInTreeAutoscaling"),
			"the autoscaler would change the gang's size; PickyMan admits fixed gangs"))
	}
	gpu := corev1.ResourceName(gpuResource)
	var out []pickymanv1.PodSet
	if head := &c.HeadGroupSpec.Template.Spec; hasGPULimit(head) {
		if jobframework.GPULimit(head, gpu) <= 0 {
			errs = append(errs, field.Required(rayClusterSpecPath.Child("headGroupSpec", "template", "spec", "containers").Key("resources.limits").Key(gpuResource),
				"the head asks for an accelerator but not for "+gpuResource))
		}
		out = append(out, pickymanv1.PodSet{Name: RayHeadPodSet, Count: 1, GPUsPerPod: jobframework.GPULimit(head, gpu), GPUModel: head.NodeSelector[gpuProductLabel]})
	}
	seen := map[string]bool{RayHeadPodSet: true}
	for i := range c.WorkerGroupSpecs {
		g := &c.WorkerGroupSpecs[i]
		p := rayClusterSpecPath.Child("workerGroupSpecs").Index(i)
		if seen[g.GroupName] {
			errs = append(errs, field.Duplicate(p.Child("groupName"), g.GroupName))
			continue
		}
		seen[g.GroupName] = true
		if ptr.Deref(g.Suspend, false) {
			errs = append(errs, field.Forbidden(p.Child("suspend"), "PickyMan suspends the whole RayJob, not one worker group"))
		}
		count := ptr.Deref(g.Replicas, 1) * max(1, g.NumOfHosts)
		gpus := jobframework.GPULimit(&g.Template.Spec, gpu)
		if gpus <= 0 && count > 0 {
			errs = append(errs, field.Required(p.Child("template", "spec", "containers").Key("resources.limits").Key(gpuResource),
				"every worker of a PickyMan RayJob needs a GPU limit"))
			continue
		}
		if count == 0 {
			continue
		}
		out = append(out, pickymanv1.PodSet{Name: g.GroupName, Count: count, GPUsPerPod: gpus, GPUModel: g.Template.Spec.NodeSelector[gpuProductLabel]})
	}
	if len(errs) == 0 && len(out) == 0 {
		errs = append(errs, field.Required(rayClusterSpecPath.Child("workerGroupSpecs"), "a PickyMan RayJob needs GPU workers"))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return out, nil
}

// PodTemplates returns the templates of the gang's groups: the head's only when it asks for
// GPUs (the operator places it then), and every worker group's.
func (j *Job) PodTemplates() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	c := j.Spec.RayClusterSpec
	if c == nil {
		return out
	}
	if hasGPULimit(&c.HeadGroupSpec.Template.Spec) {
		out[RayHeadPodSet] = &c.HeadGroupSpec.Template
	}
	for i := range c.WorkerGroupSpecs {
		out[c.WorkerGroupSpecs[i].GroupName] = &c.WorkerGroupSpecs[i].Template
	}
	return out
}

// hasGPULimit says whether any container of a pod spec has a limit on a resource named like a
// GPU (nvidia.com/gpu, amd.com/gpu, ...): the adapter does not know the configured resource
// here, and a head that asks for an accelerator belongs in the gang.
func hasGPULimit(spec *corev1.PodSpec) bool {
	for i := range spec.Containers {
		for name, q := range spec.Containers[i].Resources.Limits {
			if q.Value() > 0 && strings.HasSuffix(string(name), "/gpu") {
				return true
			}
		}
	}
	return false
}

// IsSuspended reports spec.suspend.
func (j *Job) IsSuspended() bool { return j.Spec.Suspend }

// Suspend sets spec.suspend.
func (j *Job) Suspend(s bool) { j.Spec.Suspend = s }

// Finished reports the job deployment status Complete (succeeded when the Ray job
// SUCCEEDED) or Failed.
func (j *Job) Finished() (finished, succeeded bool) {
	switch j.Status.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusComplete:
		return true, j.Status.JobStatus == rayv1.JobStatusSucceeded
	case rayv1.JobDeploymentStatusFailed, rayv1.JobDeploymentStatusValidationFailed:
		return true, false
	}
	return false, false
}

// PodSetOf maps a pod of the job's RayCluster to its group. KubeRay's pods carry no index,
// so the index is AnyIndex: the binder gives the pod a free slot of its pod set.
func (j *Job) PodSetOf(pod *corev1.Pod) (string, int32, bool) {
	if pod.Labels[pickymanv1.LabelAllocation] != jobframework.AllocationName(GVK.Kind, j.Name) {
		return "", 0, false
	}
	switch pod.Labels[rayNodeTypeLabel] {
	case rayNodeTypeHead:
		return RayHeadPodSet, jobframework.AnyIndex, true
	case rayNodeTypeWorker:
		g := pod.Labels[rayNodeGroupLabel]
		if g == "" || g == rayHeadGroupNameKey {
			return "", 0, false
		}
		return g, jobframework.AnyIndex, true
	}
	return "", 0, false
}

// PodSelector selects the pods of the job's RayCluster by the Allocation label the operator
// puts on its templates.
func (j *Job) PodSelector() map[string]string {
	return map[string]string{pickymanv1.LabelAllocation: jobframework.AllocationName(GVK.Kind, j.Name)}
}
