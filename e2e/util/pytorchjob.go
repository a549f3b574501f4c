package util

import (
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pickyman/pickyman/testbed/cluster"
)

// PyTorchJobWrapper builds a PyTorchJob for tests.
type PyTorchJobWrapper struct{ kftraining.PyTorchJob }

// MakePyTorchJob returns a job with no replicas yet.
func MakePyTorchJob(name, ns string) *PyTorchJobWrapper {
	return &PyTorchJobWrapper{kftraining.PyTorchJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kftraining.SchemeGroupVersion.String(), Kind: kftraining.PyTorchJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kftraining.PyTorchJobSpec{
			// Finished pods stay, so tests can read their final phase.
			RunPolicy:           kftraining.RunPolicy{CleanPodPolicy: kftraining.CleanPodPolicyPointer(kftraining.CleanPodPolicyNone)},
			PyTorchReplicaSpecs: map[kftraining.ReplicaType]*kftraining.ReplicaSpec{},
		},
	}}
}

// Master adds one master replica with gpus GPUs.
func (w *PyTorchJobWrapper) Master(gpus int64) *PyTorchJobWrapper {
	w.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster] = replica(1, gpus)
	return w
}

// Workers adds n worker replicas with gpus GPUs each.
func (w *PyTorchJobWrapper) Workers(n int32, gpus int64) *PyTorchJobWrapper {
	w.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker] = replica(n, gpus)
	return w
}

// Elastic sets elasticPolicy: the Worker replicas may change from lo to hi (torchrun's
// elastic min and max nodes).
func (w *PyTorchJobWrapper) Elastic(lo, hi int32) *PyTorchJobWrapper {
	w.Spec.ElasticPolicy = &kftraining.ElasticPolicy{MinReplicas: &lo, MaxReplicas: &hi}
	return w
}

// NodeSelector pins every replica to nodes with these labels.
func (w *PyTorchJobWrapper) NodeSelector(sel map[string]string) *PyTorchJobWrapper {
	for _, r := range w.Spec.PyTorchReplicaSpecs {
		r.Template.Spec.NodeSelector = sel
	}
	return w
}

// Suspend sets runPolicy.suspend.
func (w *PyTorchJobWrapper) Suspend(s bool) *PyTorchJobWrapper {
	w.Spec.RunPolicy.Suspend = &s
	return w
}

// Obj returns the job.
func (w *PyTorchJobWrapper) Obj() *kftraining.PyTorchJob { return &w.PyTorchJob }

func replica(n int32, gpus int64) *kftraining.ReplicaSpec {
	gpu := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &kftraining.ReplicaSpec{
		Replicas:      &n,
		RestartPolicy: kftraining.RestartPolicyNever,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  kftraining.PyTorchJobDefaultContainerName,
				Image: "pickyman.dev/fake-training:latest",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{cluster.GPUResource: gpu},
					Limits:   corev1.ResourceList{cluster.GPUResource: gpu},
				},
			}},
		}},
	}
}
