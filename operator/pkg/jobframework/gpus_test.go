package jobframework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func withGPUs(name string, limit, request int64) corev1.Container {
	c := corev1.Container{Name: name}
	if limit > 0 {
		c.Resources.Limits = corev1.ResourceList{gpu: *resource.NewQuantity(limit, resource.DecimalSI)}
	}
	if request > 0 {
		c.Resources.Requests = corev1.ResourceList{gpu: *resource.NewQuantity(request, resource.DecimalSI)}
	}
	return c
}

func sidecar(c corev1.Container) corev1.Container {
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

func TestGPULimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want int32
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{withGPUs("a", 2, 0), withGPUs("b", 1, 0), withGPUs("c", 0, 0)}}, 3},
		{"a request without a limit counts", corev1.PodSpec{Containers: []corev1.Container{withGPUs("a", 0, 2)}}, 2},
		{"an init container larger than the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{withGPUs("warm", 4, 0)},
			Containers:     []corev1.Container{withGPUs("a", 1, 0)}}, 4},
		{"an init container smaller than the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{withGPUs("warm", 1, 0)},
			Containers:     []corev1.Container{withGPUs("a", 2, 0)}}, 2},
		{"a sidecar runs beside the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(withGPUs("proxy", 1, 0))},
			Containers:     []corev1.Container{withGPUs("a", 2, 0)}}, 3},
		{"an init container after a sidecar runs beside it", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(withGPUs("proxy", 1, 0)), withGPUs("warm", 3, 0)},
			Containers:     []corev1.Container{withGPUs("a", 1, 0)}}, 4},
		{"an init container before a sidecar does not", corev1.PodSpec{
			InitContainers: []corev1.Container{withGPUs("warm", 3, 0), sidecar(withGPUs("proxy", 1, 0))},
			Containers:     []corev1.Container{withGPUs("a", 1, 0)}}, 3},
		{"overhead", corev1.PodSpec{Containers: []corev1.Container{withGPUs("a", 1, 0)},
			Overhead: corev1.ResourceList{gpu: resource.MustParse("1")}}, 2},
		{"no GPUs", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GPULimit(&tc.spec, gpu); got != tc.want {
				t.Errorf("GPULimit = %d, want %d", got, tc.want)
			}
		})
	}
}
