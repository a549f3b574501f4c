package jobframework

import (
	corev1 "k8s.io/api/core/v1"
)

// GPULimit is the number of GPUs of resource that a pod of spec holds on its node, counted
// the way the kubelet admits it: the larger of what its containers and its sidecars (init
// containers that keep running, restartPolicy Always) hold together, and what any init
// container holds while it runs beside the sidecars started before it; plus the pod's
// overhead. A container's count is its limit, or its request where it gives no limit.
func GPULimit(spec *corev1.PodSpec, resource corev1.ResourceName) int32 {
	var running, sidecars, peak int64
	for i := range spec.Containers {
		running += containerGPUs(&spec.Containers[i], resource)
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		n := containerGPUs(c, resource)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += n
			peak = max(peak, sidecars)
			continue
		}
		peak = max(peak, sidecars+n)
	}
	n := max(running+sidecars, peak)
	if q, ok := spec.Overhead[resource]; ok {
		n += q.Value()
	}
	return int32(min(n, 1<<31-1))
}

func containerGPUs(c *corev1.Container, resource corev1.ResourceName) int64 {
	if q, ok := c.Resources.Limits[resource]; ok {
		return max(q.Value(), 0)
	}
	if q, ok := c.Resources.Requests[resource]; ok {
		return max(q.Value(), 0)
	}
	return 0
}
