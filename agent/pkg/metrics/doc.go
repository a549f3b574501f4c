// Package metrics exposes the agent's Prometheus metrics: the GPU gauges under the names
// dcgm-exporter uses (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE, with
// its labels gpu, UUID, modelName, Hostname, pod, namespace, container), so dashboards and
// the operator read fake and real nodes alike, and the agent's own pickyman_agent_* metrics
// (per-pod progress and read traffic, API errors, acknowledgements).
package metrics
