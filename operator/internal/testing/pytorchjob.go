package testing

import (
	"strconv"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
)

// PyTorchJobWrapper builds a kubeflow.org/v1 PyTorchJob.
type PyTorchJobWrapper struct{ kftraining.PyTorchJob }

// MakePyTorchJob starts a PyTorchJob in namespace ns with one Master of one GPU, in queue
// "default".
func MakePyTorchJob(name, ns string) *PyTorchJobWrapper {
	w := &PyTorchJobWrapper{kftraining.PyTorchJob{
		TypeMeta: metav1.TypeMeta{APIVersion: kftraining.GroupVersion.String(), Kind: kftraining.PyTorchJobKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{pickymanv1.LabelQueue: "default"},
		},
		Spec: kftraining.PyTorchJobSpec{PyTorchReplicaSpecs: map[kftraining.ReplicaType]*kftraining.ReplicaSpec{}},
	}}
	return w.Replicas(kftraining.PyTorchJobReplicaTypeMaster, 1, 1)
}

// Obj returns the job.
func (w *PyTorchJobWrapper) Obj() *kftraining.PyTorchJob { return w.DeepCopy() }

// Replicas sets count replicas of type rt, each with one container that has a limit of gpus
// nvidia.com/gpu (no limit if gpus < 0).
func (w *PyTorchJobWrapper) Replicas(rt kftraining.ReplicaType, count, gpus int32) *PyTorchJobWrapper {
	c := corev1.Container{Name: "pytorch", Image: "pytorch:latest"}
	if gpus >= 0 {
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(strconv.Itoa(int(gpus)))}
	}
	w.Spec.PyTorchReplicaSpecs[rt] = &kftraining.ReplicaSpec{
		Replicas:      ptr.To(count),
		RestartPolicy: kftraining.RestartPolicyOnFailure,
		Template:      corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
	}
	return w
}

// Workers sets count Worker replicas of gpus GPUs each.
func (w *PyTorchJobWrapper) Workers(count, gpus int32) *PyTorchJobWrapper {
	return w.Replicas(kftraining.PyTorchJobReplicaTypeWorker, count, gpus)
}

// Master sets the Master replica's GPUs.
func (w *PyTorchJobWrapper) Master(gpus int32) *PyTorchJobWrapper {
	return w.Replicas(kftraining.PyTorchJobReplicaTypeMaster, 1, gpus)
}

// NoMaster removes the Master replica type.
func (w *PyTorchJobWrapper) NoMaster() *PyTorchJobWrapper {
	delete(w.Spec.PyTorchReplicaSpecs, kftraining.PyTorchJobReplicaTypeMaster)
	return w
}

// Elastic sets elasticPolicy's minReplicas and maxReplicas (the Worker bounds).
func (w *PyTorchJobWrapper) Elastic(lo, hi int32) *PyTorchJobWrapper {
	w.Spec.ElasticPolicy = &kftraining.ElasticPolicy{MinReplicas: &lo, MaxReplicas: &hi}
	return w
}

// Queue sets the pickyman.dev/queue label; "" removes it.
func (w *PyTorchJobWrapper) Queue(q string) *PyTorchJobWrapper {
	if q == "" {
		delete(w.Labels, pickymanv1.LabelQueue)
	} else {
		w.Labels[pickymanv1.LabelQueue] = q
	}
	return w
}

// Label sets a label.
func (w *PyTorchJobWrapper) Label(k, v string) *PyTorchJobWrapper { w.Labels[k] = v; return w }

// Annotation sets an annotation.
func (w *PyTorchJobWrapper) Annotation(k, v string) *PyTorchJobWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// GPUProduct sets a node selector on the GPU product label on every replica template.
func (w *PyTorchJobWrapper) GPUProduct(label, product string) *PyTorchJobWrapper {
	for _, s := range w.Spec.PyTorchReplicaSpecs {
		s.Template.Spec.NodeSelector = map[string]string{label: product}
	}
	return w
}

// Suspend sets runPolicy.suspend.
func (w *PyTorchJobWrapper) Suspend(s bool) *PyTorchJobWrapper {
	w.Spec.RunPolicy.Suspend = ptr.To(s)
	return w
}

// Condition adds a true job condition.
func (w *PyTorchJobWrapper) Condition(t kftraining.JobConditionType) *PyTorchJobWrapper {
	w.Status.Conditions = append(w.Status.Conditions, kftraining.JobCondition{Type: t, Status: corev1.ConditionTrue})
	return w
}

// MakePod builds a pod of a PyTorchJob replica as the training-operator would create it.
func MakePod(job *kftraining.PyTorchJob, rt kftraining.ReplicaType, index int32) *corev1.Pod {
	spec := job.Spec.PyTorchReplicaSpecs[rt]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      job.Name + "-" + lower(string(rt)) + "-" + strconv.Itoa(int(index)),
			Namespace: job.Namespace,
			Labels: map[string]string{
				kftraining.JobNameLabel:      job.Name,
				kftraining.ReplicaTypeLabel:  lower(string(rt)),
				kftraining.ReplicaIndexLabel: strconv.Itoa(int(index)),
			},
			Annotations: map[string]string{},
		},
	}
	if spec != nil {
		for k, v := range spec.Template.Labels {
			pod.Labels[k] = v
		}
		for k, v := range spec.Template.Annotations {
			pod.Annotations[k] = v
		}
		spec.Template.Spec.DeepCopyInto(&pod.Spec)
	}
	if job.UID != "" {
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, kftraining.GroupVersion.WithKind(kftraining.PyTorchJobKind))}
	}
	return pod
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
