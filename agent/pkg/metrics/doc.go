// Package metrics exposes the agent's Prometheus metrics: the GPU gauges
// (pickyman_agent_gpu_utilization_percent, pickyman_agent_gpu_memory_used_mib,
// pickyman_agent_gpu_memory_free_mib, or dcgm-exporter's DCGM_FI_DEV_* names on request,
// with dcgm-exporter's labels gpu, UUID, modelName, Hostname, pod, namespace, container), so
// dashboards read fake and real nodes alike, and the agent's own pickyman_agent_* metrics
// (per-pod progress and read traffic, API errors, acknowledgements).
package metrics
