package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Default fills every unset field with its default.
func (c *Configuration) Default() {
	if c.APIVersion == "" {
		c.APIVersion = "config.pickyman.dev/v1alpha1"
	}
	if c.Kind == "" {
		c.Kind = "Configuration"
	}
	if len(c.Queues) == 0 {
		c.Queues = []Queue{{Name: "default"}}
	}
	if c.Policy.Name == "" {
		c.Policy.Name = "pickyman"
	}
	o := &c.Overhead
	setF(&o.WriteBytesPerSecond, 1<<30)
	setF(&o.ReadBytesPerSecond, 2<<30)
	setD(&o.ContainerStart, 20*time.Second)
	setD(&o.Warmup, 30*time.Second)
	setD(&o.GracePeriod, 30*time.Second)
	setD(&c.Protection.MinRunAfterResume, 10*time.Minute)
	setD(&c.Checkpoint.BoundaryDeadline, 30*time.Minute)
	setD(&c.Checkpoint.NowDeadline, 2*time.Minute)
	setD(&c.ScheduleInterval, 10*time.Second)
	setD(&c.ReservationTimeout, time.Hour)
	setD(&c.NodeLostTimeout, 5*time.Minute)
	if c.GPUResource == "" {
		c.GPUResource = "nvidia.com/gpu"
	}
	if c.GPUProductLabel == "" {
		c.GPUProductLabel = "nvidia.com/gpu.product"
	}
	// Every admission is one Allocation write, and the Allocation writes share one token
	// bucket of QPS: the admission stage measured 47.8 admissions/s at 50 (Kueue's default)
	// and 96.9 at 200 (docs/operator.md, make bench-admission). client-go's own (5 and 10, or
	// controller-runtime's 20 and 30) would pace admissions far below what the API server
	// serves.
	if c.ClientConnection.QPS == 0 {
		c.ClientConnection.QPS = 100
	}
	if c.ClientConnection.Burst == 0 {
		c.ClientConnection.Burst = 200
	}
	if c.WriteConcurrency == 0 {
		c.WriteConcurrency = 8
	}
	if c.JobConcurrency == 0 {
		c.JobConcurrency = 16
	}
	m := &c.Manager
	if m.MetricsBindAddress == "" {
		m.MetricsBindAddress = ":8080"
	}
	if m.HealthProbeBindAddress == "" {
		m.HealthProbeBindAddress = ":8081"
	}
	if m.LeaderElection == nil {
		m.LeaderElection = ptr.To(true)
	}
	if m.WebhookPort == 0 {
		m.WebhookPort = 9443
	}
}

func setF(f *float64, v float64) {
	if *f == 0 {
		*f = v
	}
}

func setD(d *metav1.Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}
