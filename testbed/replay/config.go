package replay

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/policies/pickyman"
	"github.com/pickyman/pickyman/operator/pkg/policies/tiresias"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// OperatorConfig is the operator's configuration for replaying jobs under policy at
// timeScale: one queue per trace queue, and every duration the simulator uses in trace time
// (the physics' overheads, the policy's time constants) divided by the time scale, since
// the operator lives in real time while the agent runs trace time timeScale times faster.
func OperatorConfig(policy string, jobs []traces.Job, timeScale float64) *configv1.Configuration {
	real := func(d time.Duration) metav1.Duration {
		return metav1.Duration{Duration: time.Duration(float64(d) / timeScale)}
	}
	ph := sim.DefaultPhysics()
	c := &configv1.Configuration{
		Queues: Queues(jobs),
		Policy: ScaledPolicy(policy, timeScale),
		Overhead: configv1.Overhead{
			WriteBytesPerSecond: ph.WriteBandwidth * timeScale,
			ReadBytesPerSecond:  ph.ReadBandwidth * timeScale,
			ContainerStart:      real(ph.ContainerStart),
			Warmup:              real(ph.WarmUp),
			GracePeriod:         real(overhead.DefaultParams().Grace),
		},
		Protection:       configv1.Protection{MinRunAfterResume: real(pickyman.DefaultOptions().Protect)},
		ScheduleInterval: metav1.Duration{Duration: time.Second},
	}
	c.Default()
	// Deadlines and reservations far longer than anything the scaled physics takes.
	c.Checkpoint.BoundaryDeadline = real(24 * time.Hour)
	c.Checkpoint.NowDeadline = real(time.Hour)
	c.ReservationTimeout = real(24 * time.Hour)
	return c
}

// ScaledPolicy is the policy section for policy with its time constants, from their
// trace-time defaults, in real time. (Aging is a rate, seconds per second, and needs no
// scaling.)
func ScaledPolicy(policy string, timeScale float64) configv1.Policy {
	real := func(d time.Duration) *metav1.Duration {
		return &metav1.Duration{Duration: time.Duration(float64(d) / timeScale)}
	}
	p := configv1.Policy{Name: policy}
	switch policies.ArgsOf(policy) {
	case policies.ArgsPickyMan:
		o := pickyman.DefaultOptions()
		p.PickyMan = &configv1.PickyManArgs{Unknown: real(o.Unknown), Refresh: real(o.Refresh), Promote: real(o.Promote)}
	case policies.ArgsTiresias:
		a := &configv1.TiresiasArgs{}
		for _, d := range tiresias.DefaultThresholds {
			a.Thresholds = append(a.Thresholds, *real(d))
		}
		p.Tiresias = a
	case policies.ArgsNone, policies.ArgsFIFO:
	}
	return p
}
