package testing

import (
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
)

// RayJobWrapper builds a ray.io/v1 RayJob.
type RayJobWrapper struct{ rayv1.RayJob }

// MakeRayJob starts a RayJob in namespace ns, in queue "default", whose RayCluster has a head
// without GPUs and no worker group.
func MakeRayJob(name, ns string) *RayJobWrapper {
	return &RayJobWrapper{rayv1.RayJob{
		TypeMeta: metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{pickymanv1.LabelQueue: "default"},
		},
		Spec: rayv1.RayJobSpec{
			Entrypoint:               "python train.py",
			ShutdownAfterJobFinishes: true,
			RayClusterSpec: &rayv1.RayClusterSpec{
				HeadGroupSpec: rayv1.HeadGroupSpec{
					RayStartParams: map[string]string{},
					Template:       rayTemplate("ray-head", -1),
				},
			},
		},
	}}
}

// rayTemplate is a pod template with one container that has a limit of gpus nvidia.com/gpu
// (no limit if gpus < 0).
func rayTemplate(name string, gpus int32) corev1.PodTemplateSpec {
	c := corev1.Container{Name: name, Image: "rayproject/ray:2.46.0"}
	if gpus >= 0 {
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(strconv.Itoa(int(gpus)))}
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// Obj returns the job.
func (w *RayJobWrapper) Obj() *rayv1.RayJob { return w.DeepCopy() }

// HeadGPUs gives the head a limit of gpus GPUs (none if gpus < 0).
func (w *RayJobWrapper) HeadGPUs(gpus int32) *RayJobWrapper {
	w.Spec.RayClusterSpec.HeadGroupSpec.Template = rayTemplate("ray-head", gpus)
	return w
}

// WorkerGroup adds a worker group of replicas pods of gpus GPUs each (no limit if gpus < 0).
func (w *RayJobWrapper) WorkerGroup(name string, replicas, gpus int32) *RayJobWrapper {
	w.Spec.RayClusterSpec.WorkerGroupSpecs = append(w.Spec.RayClusterSpec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{
		GroupName: name, Replicas: ptr.To(replicas), MinReplicas: ptr.To(replicas), MaxReplicas: ptr.To(replicas),
		RayStartParams: map[string]string{}, Template: rayTemplate("ray-worker", gpus),
	})
	return w
}

// GPUProduct sets a node selector on the GPU product label on every group's template.
func (w *RayJobWrapper) GPUProduct(label, product string) *RayJobWrapper {
	c := w.Spec.RayClusterSpec
	c.HeadGroupSpec.Template.Spec.NodeSelector = map[string]string{label: product}
	for i := range c.WorkerGroupSpecs {
		c.WorkerGroupSpecs[i].Template.Spec.NodeSelector = map[string]string{label: product}
	}
	return w
}

// Queue sets the pickyman.dev/queue label; "" removes it.
func (w *RayJobWrapper) Queue(q string) *RayJobWrapper {
	if q == "" {
		delete(w.Labels, pickymanv1.LabelQueue)
	} else {
		w.Labels[pickymanv1.LabelQueue] = q
	}
	return w
}

// Annotation sets an annotation.
func (w *RayJobWrapper) Annotation(k, v string) *RayJobWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Suspend sets spec.suspend.
func (w *RayJobWrapper) Suspend(s bool) *RayJobWrapper { w.Spec.Suspend = s; return w }

// MakeRayPod builds a pod of a RayJob's cluster as KubeRay would create it: the template of
// the head (group "") or of a worker group, with KubeRay's labels. KubeRay's pods carry no
// index; name tells them apart.
func MakeRayPod(job *rayv1.RayJob, group, name string) *corev1.Pod {
	c := job.Spec.RayClusterSpec
	t := &c.HeadGroupSpec.Template
	labels := map[string]string{"ray.io/cluster": job.Name + "-raycluster", "ray.io/node-type": "head", "ray.io/group": "headgroup"}
	if group != "" {
		for i := range c.WorkerGroupSpecs {
			if c.WorkerGroupSpecs[i].GroupName == group {
				t = &c.WorkerGroupSpecs[i].Template
			}
		}
		labels["ray.io/node-type"], labels["ray.io/group"] = "worker", group
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.Namespace, Labels: map[string]string{}, Annotations: map[string]string{}}}
	for k, v := range t.Labels {
		pod.Labels[k] = v
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
	for k, v := range t.Annotations {
		pod.Annotations[k] = v
	}
	t.Spec.DeepCopyInto(&pod.Spec)
	return pod
}
