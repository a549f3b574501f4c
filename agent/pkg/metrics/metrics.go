package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/gpu"
	"github.com/pickyman/pickyman/agent/pkg/protocol"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

var gpuLabels = []string{"gpu", "UUID", "modelName", "Hostname", "pod", "namespace", "container"}

// gpuDescs are the three GPU gauges under one set of names.
type gpuDescs struct{ util, fbUsed, fbFree *prometheus.Desc }

var (
	// ownGPU are the agent's own names, the default: beside the GPU Operator's dcgm-exporter
	// they neither double its series nor fight it for them.
	ownGPU = gpuDescs{
		util:   prometheus.NewDesc("pickyman_agent_gpu_utilization_percent", "GPU utilization (in %).", gpuLabels, nil),
		fbUsed: prometheus.NewDesc("pickyman_agent_gpu_memory_used_mib", "GPU framebuffer memory used (in MiB).", gpuLabels, nil),
		fbFree: prometheus.NewDesc("pickyman_agent_gpu_memory_free_mib", "GPU framebuffer memory free (in MiB).", gpuLabels, nil),
	}
	// dcgmGPU are dcgm-exporter's names (Collector.DCGMNames), for a cluster without it whose
	// dashboards read them.
	dcgmGPU = gpuDescs{
		util:   prometheus.NewDesc("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", gpuLabels, nil),
		fbUsed: prometheus.NewDesc("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", gpuLabels, nil),
		fbFree: prometheus.NewDesc("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", gpuLabels, nil),
	}
	descGPUs = prometheus.NewDesc("pickyman_agent_gpus", "GPUs the agent sees on its node.", []string{"Hostname"}, nil)
	descUp   = prometheus.NewDesc("pickyman_agent_gpu_backend_up", "1 if the last GPU read succeeded.", []string{"Hostname"}, nil)

	podLabels      = []string{"namespace", "pod"}
	descEpochsDone = prometheus.NewDesc("pickyman_agent_pod_epochs_done", "Epochs a training pod completed (including those before its resume point).", podLabels, nil)
	descEpochSecs  = prometheus.NewDesc("pickyman_agent_pod_epoch_seconds", "Duration of a training pod's last epoch.", podLabels, nil)
	descReadBytes  = prometheus.NewDesc("pickyman_agent_pod_read_bytes", "Storage bytes a training pod read since it started.", podLabels, nil)
	descReadRate   = prometheus.NewDesc("pickyman_agent_pod_read_rate_bytes_per_second", "Smoothed storage read rate of a training pod.", podLabels, nil)
)

// Collector reads GPUs and pod progress at scrape time.
type Collector struct {
	Hostname string
	// Backends returns the GPU backends by node name: one node, or every fake node in
	// testbed mode.
	Backends func() map[string]gpu.Backend
	Registry *api.Registry
	// DCGMNames exports the GPU gauges under dcgm-exporter's names (DCGM_FI_DEV_GPU_UTIL,
	// DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE) instead of the agent's own
	// (pickyman_agent_gpu_*). Off by default: where the GPU Operator runs dcgm-exporter, the
	// same names from two exporters would double every series.
	DCGMNames bool

	// APIErrors counts failed local API calls by error code.
	APIErrors *prometheus.CounterVec
	// Acks counts checkpoint acknowledgements by mode.
	Acks *prometheus.CounterVec
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector for backends keyed by node name.
func New(backends func() map[string]gpu.Backend, reg *api.Registry) *Collector {
	return &Collector{
		Backends:  backends,
		Registry:  reg,
		APIErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pickyman_agent_api_errors_total", Help: "Local API calls refused, by error code."}, []string{"code"}),
		Acks:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pickyman_agent_checkpoint_acks_total", Help: "Checkpoint requests acknowledged to the operator."}, []string{"namespace"}),
	}
}

// APIError counts a refused call (for api.Server.Errors).
func (c *Collector) APIError(code protocol.ErrorCode) {
	c.APIErrors.WithLabelValues(string(code)).Inc()
}

// Acked counts an acknowledgement (for coord.Coordinator.OnAck).
func (c *Collector) Acked(p api.Pod, _ agentv1alpha1.CheckpointAck) {
	c.Acks.WithLabelValues(p.Namespace).Inc()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	g := c.gpuDescs()
	for _, d := range []*prometheus.Desc{g.util, g.fbUsed, g.fbFree, descGPUs, descUp, descEpochsDone, descEpochSecs, descReadBytes, descReadRate} {
		ch <- d
	}
	c.APIErrors.Describe(ch)
	c.Acks.Describe(ch)
}

func (c *Collector) gpuDescs() gpuDescs {
	if c.DCGMNames {
		return dcgmGPU
	}
	return ownGPU
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	g := c.gpuDescs()
	for host, b := range c.Backends() {
		devs, err := b.Devices()
		up := 1.0
		if err != nil {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, host)
		ch <- prometheus.MustNewConstMetric(descGPUs, prometheus.GaugeValue, float64(len(devs)), host)
		for _, d := range devs {
			lv := []string{strconv.Itoa(d.Index), d.UUID, d.Product, host, d.Pod, d.Namespace, d.Container}
			ch <- prometheus.MustNewConstMetric(g.util, prometheus.GaugeValue, float64(d.Utilization), lv...)
			ch <- prometheus.MustNewConstMetric(g.fbUsed, prometheus.GaugeValue, float64(d.MemoryUsed>>20), lv...)
			ch <- prometheus.MustNewConstMetric(g.fbFree, prometheus.GaugeValue, float64(d.MemoryFree()>>20), lv...)
		}
	}
	if c.Registry != nil {
		for _, pp := range c.Registry.All() {
			lv := []string{pp.Pod.Namespace, pp.Pod.Name}
			ch <- prometheus.MustNewConstMetric(descEpochsDone, prometheus.GaugeValue, float64(pp.Progress.EpochsDone), lv...)
			ch <- prometheus.MustNewConstMetric(descEpochSecs, prometheus.GaugeValue, pp.Progress.EpochSeconds, lv...)
			ch <- prometheus.MustNewConstMetric(descReadBytes, prometheus.GaugeValue, float64(pp.Progress.ReadBytes), lv...)
			ch <- prometheus.MustNewConstMetric(descReadRate, prometheus.GaugeValue, pp.Progress.ReadRate, lv...)
		}
	}
	c.APIErrors.Collect(ch)
	c.Acks.Collect(ch)
}
