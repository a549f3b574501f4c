package replay

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
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
		Policy: configv1.Policy{Name: policy, Params: ScaledParams(policy, timeScale)},
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

// ScaledParams are the policy's time constants, from their trace-time defaults, in real time.
// (Aging is a rate, seconds per second, and needs no scaling.)
func ScaledParams(policy string, timeScale float64) map[string]string {
	real := func(d time.Duration) string { return time.Duration(float64(d) / timeScale).String() }
	switch {
	case strings.HasPrefix(policy, pickyman.Name):
		o := pickyman.DefaultOptions()
		params := map[string]string{"unknown": real(o.Unknown), "refresh": real(o.Refresh)}
		if o.Promote > 0 {
			params["promote"] = real(o.Promote)
		}
		return params
	case policy == tiresias.Name:
		var th []string
		for _, d := range tiresias.DefaultThresholds {
			th = append(th, real(d))
		}
		return map[string]string{"thresholds": strings.Join(th, ",")}
	}
	return nil
}
