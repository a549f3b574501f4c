package util

import (
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pickyman/pickyman/testbed/cluster"
)

// RayJobWrapper builds a ray.io/v1 RayJob for the e2e suites.
type RayJobWrapper struct{ rayv1.RayJob }

// MakeRayJob starts a RayJob submitted over HTTP (the testbed dashboard takes it), whose
// RayCluster has a head without GPUs and is deleted when the job finishes.
func MakeRayJob(name, ns string) *RayJobWrapper {
	head := corev1.Container{Name: "ray-head", Image: "rayproject/ray:2.46.0",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}
	return &RayJobWrapper{rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}},
		Spec: rayv1.RayJobSpec{
			Entrypoint:               "python train.py",
			SubmissionMode:           rayv1.HTTPMode,
			ShutdownAfterJobFinishes: true,
			RayClusterSpec: &rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{
				RayStartParams: map[string]string{},
				Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{head}}},
			}},
		},
	}}
}

// Obj returns the job.
func (w *RayJobWrapper) Obj() *rayv1.RayJob { return w.DeepCopy() }

// Workers adds a worker group "gpu" of replicas pods of gpus GPUs each.
func (w *RayJobWrapper) Workers(replicas, gpus int32) *RayJobWrapper {
	c := corev1.Container{Name: "ray-worker", Image: "rayproject/ray:2.46.0",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{cluster.GPUResource: resource.MustParse(strconv.Itoa(int(gpus)))}}}
	w.Spec.RayClusterSpec.WorkerGroupSpecs = append(w.Spec.RayClusterSpec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{
		GroupName: "gpu", Replicas: ptr.To(replicas), MinReplicas: ptr.To(replicas), MaxReplicas: ptr.To(replicas),
		RayStartParams: map[string]string{},
		Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
	})
	return w
}

// NodeSelector sets a node selector on the worker groups' templates (the head goes anywhere).
func (w *RayJobWrapper) NodeSelector(sel map[string]string) *RayJobWrapper {
	for i := range w.Spec.RayClusterSpec.WorkerGroupSpecs {
		w.Spec.RayClusterSpec.WorkerGroupSpecs[i].Template.Spec.NodeSelector = sel
	}
	return w
}

// PickyMan puts the job in a PickyMan queue, names its model, and gives its GPU workers the
// training the testbed agent simulates (hints on the job and on the worker templates).
func (w *RayJobWrapper) PickyMan(queue, model string, t Training) *RayJobWrapper {
	var templates []*corev1.PodTemplateSpec
	for i := range w.Spec.RayClusterSpec.WorkerGroupSpecs {
		templates = append(templates, &w.Spec.RayClusterSpec.WorkerGroupSpecs[i].Template)
	}
	applyTraining(&w.ObjectMeta, templates, queue, model, t)
	return w
}
