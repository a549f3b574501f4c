package setup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// The bound-pods cache keeps of a pod what its GPU count, its node, phase and Allocation
// need, and drops the rest (environment, volumes, other resources, other labels).
func TestGPUPodTransform(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	now := metav1.Now()
	res := func(gpus string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{gpu: resource.MustParse(gpus), corev1.ResourceCPU: resource.MustParse("8")},
			Requests: corev1.ResourceList{gpu: resource.MustParse(gpus), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
	}
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "7", DeletionTimestamp: &now,
			Labels:      map[string]string{v1alpha1.LabelAllocation: "a", "team": "x"},
			Annotations: map[string]string{"big": "value"}},
		Spec: corev1.PodSpec{
			NodeName:       "n",
			Containers:     []corev1.Container{{Name: "main", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "B"}}, Resources: res("2")}},
			InitContainers: []corev1.Container{{Name: "warm", Resources: res("3")}, {Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: res("1")}},
			Volumes:        []corev1.Volume{{Name: "v"}},
			Overhead:       corev1.ResourceList{gpu: resource.MustParse("1")},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady}}},
	}
	before := jobframework.GPULimit(&in.Spec, gpu)
	obj, err := GPUPodTransform(gpu)(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	out := obj.(*corev1.Pod)
	if got := jobframework.GPULimit(&out.Spec, gpu); got != before || got != 4 {
		t.Errorf("GPULimit after the transform %d, before %d, want 4 both", got, before)
	}
	if out.Name != "p" || out.Namespace != "ns" || out.Spec.NodeName != "n" || out.Status.Phase != corev1.PodRunning || out.DeletionTimestamp == nil {
		t.Errorf("identity, node, phase or deletion lost: %+v", out)
	}
	if len(out.Labels) != 1 || out.Labels[v1alpha1.LabelAllocation] != "a" {
		t.Errorf("labels %v, want the Allocation label only", out.Labels)
	}
	if out.Annotations != nil || out.Spec.Volumes != nil || out.Spec.Containers[0].Image != "" || out.Spec.Containers[0].Env != nil ||
		len(out.Spec.Containers[0].Resources.Limits) != 1 || out.Status.Conditions != nil {
		t.Errorf("kept more than the GPU count needs: %+v", out)
	}
}
