package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "pickyman"

// Metrics holds the operator's collectors.
type Metrics struct {
	QueueLength       *prometheus.GaugeVec
	AdmissionLatency  *prometheus.HistogramVec
	WaitingTime       *prometheus.HistogramVec
	Admissions        *prometheus.CounterVec
	Preemptions       *prometheus.CounterVec
	HandshakeDuration *prometheus.HistogramVec
	GPUsAllocated     prometheus.Gauge
	GPUsFree          prometheus.Gauge
	PredictionError   prometheus.Histogram
	CycleDuration     prometheus.Histogram
	CycleStage        *prometheus.HistogramVec
	RejectedDecisions prometheus.Counter
	FencedCycles      prometheus.Counter
	Finished          *prometheus.CounterVec
}

// cycleBuckets span 0.5 ms to 33 s: a cycle that carries out a thousand starts takes
// seconds, and a quantile above the last finite bucket reads as that bucket.
var cycleBuckets = prometheus.ExponentialBuckets(0.0005, 2, 17)

// timeBuckets spans seconds to days.
var timeBuckets = prometheus.ExponentialBuckets(1, 3, 12)

// New creates the collectors without registering them.
func New() *Metrics {
	return &Metrics{
		QueueLength: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "queue_length",
			Help: "Jobs waiting for GPUs (Queued Allocations), per queue.",
		}, []string{"queue"}),
		AdmissionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "admission_latency_seconds",
			Help:    "Time from a job's submission to its first admission.",
			Buckets: timeBuckets,
		}, []string{"queue"}),
		WaitingTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "waiting_time_seconds",
			Help:    "Time a job waited before each admission (since submission, or since it was suspended).",
			Buckets: timeBuckets,
		}, []string{"queue"}),
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "admissions_total",
			Help: "Admissions, by queue and whether the job resumed from a checkpoint.",
		}, []string{"queue", "resumed"}),
		Preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "preemptions_total",
			Help: "Preemptions decided, by suspend mode and reason.",
		}, []string{"mode", "reason"}),
		HandshakeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "checkpoint_handshake_seconds",
			Help:    "Time from a checkpoint request to the job's suspension, by outcome (Acknowledged, DeadlineExceeded, NotStarted: no pod of the job had started).",
			Buckets: timeBuckets,
		}, []string{"outcome"}),
		GPUsAllocated: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "gpus_allocated",
			Help: "GPUs promised to Admitted, Preempting and Suspended Allocations.",
		}),
		GPUsFree: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "gpus_free",
			Help: "Allocatable GPUs on schedulable nodes not promised to any job.",
		}),
		PredictionError: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "prediction_relative_error",
			Help:    "Relative error |predicted - actual| / actual of execution-time predictions, scored when jobs finish.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2},
		}),
		CycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "scheduling_cycle_seconds",
			Help:    "Duration of one scheduling cycle.",
			Buckets: cycleBuckets,
		}),
		CycleStage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "scheduling_cycle_stage_seconds",
			Help:    "Duration of each stage of a scheduling cycle: snapshot (reading the cluster's state), decide (the policy and validation), act (preparing the Allocation writes and sending them off), fence_read (reading the scheduler fence before the snapshot); after the cycle, per batch of writes: fence_swap (swapping in its promises) and writes: from a cycle's act until the last of its Allocation writes ended, after the cycle.",
			Buckets: cycleBuckets,
		}, []string{"stage"}),
		RejectedDecisions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "rejected_decisions_total",
			Help: "Scheduling cycles whose decisions failed validation and were not carried out.",
		}),
		FencedCycles: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "fenced_cycles_total",
			Help: "Scheduling cycles whose decisions were dropped because another scheduler promised GPUs since their snapshot (the scheduler fence).",
		}),
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "jobs_finished_total",
			Help: "Jobs finished, by queue and outcome (Succeeded, Failed).",
		}, []string{"queue", "outcome"}),
	}
}

// Collectors lists every collector.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.QueueLength, m.AdmissionLatency, m.WaitingTime, m.Admissions, m.Preemptions,
		m.HandshakeDuration, m.GPUsAllocated, m.GPUsFree, m.PredictionError, m.CycleDuration, m.CycleStage, m.RejectedDecisions, m.FencedCycles, m.Finished}
}

// Register registers the collectors with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.Collectors() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// NewRegistered creates the collectors and registers them with controller-runtime's
// registry, which the manager's metrics endpoint serves.
func NewRegistered() (*Metrics, error) {
	m := New()
	return m, m.Register(crmetrics.Registry)
}
