package jobframework

import (
	corev1 "k8s.io/api/core/v1"
)

// GPULimit sums the limits on resource over the containers of a pod spec.
func GPULimit(spec *corev1.PodSpec, resource corev1.ResourceName) int32 {
	var n int64
	for i := range spec.Containers {
		if q, ok := spec.Containers[i].Resources.Limits[resource]; ok {
			n += q.Value()
		}
	}
	return int32(n)
}
