package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
	"github.com/pickyman/pickyman/traces"
)

// TestRegisteredPoliciesHandTrace runs a hand-checkable trace through the registered
// baselines with hand physics (first start 15 s, resume 16 s, grace 30 s): a (4 GPUs,
// 1000 s in 10 epochs of 100 s, priority 0) at 0 and b (4 GPUs, 20 s, priority 10) at
// 937 s on one 4-GPU node. When b arrives, a has 922 s of progress (checkpoint at 900),
// 78 s to go and 3748 GPU-s of attained service, past Tiresias' first threshold (3600).
func TestRegisteredPoliciesHandTrace(t *testing.T) {
	jobs := []traces.Job{
		simtest.MakeTraceJob("a").Gang(1, 4).Duration(1000 * s).Epochs(10).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("b").Gang(1, 4).Duration(20 * s).Priority(10).Submit(937 * s).Obj(),
	}
	// No preemption: a ends at 15+1000, b runs 1015..1050.
	waits := []rec{
		{ID: "a", Start: 0, Finish: 1015, Held: 1015, StartOver: 15},
		{ID: "b", Start: 1015, Finish: 1050, Held: 35, Wait: 78, StartOver: 15},
	}
	// Preempt a now: 22 s lost, GPUs free after 30 s grace at 967; b runs 967..1002; a
	// resumes at 1002 (16 s) and redoes the last 100 s: ends 1118.
	preemptsNow := []rec{
		{ID: "a", Start: 0, Finish: 1118, Held: 1083, Wait: 35, Preemptions: 1, Redone: 22, SuspendWait: 30, Resume: 16, StartOver: 15, Delay: 30},
		{ID: "b", Start: 967, Finish: 1002, Held: 35, Wait: 30, StartOver: 15},
	}
	want := map[string][]rec{
		"fifo":     waits,
		"sjf":      waits,
		"srtf":     preemptsNow,
		"tiresias": preemptsNow,
		"kueue":    preemptsNow,
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			p, err := policies.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, simtest.Cluster(1, 4), jobs, p, handConfig())
			if diff := cmp.Diff(w, recs(r)); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			sum := metrics.Summarize(r)
			var wantLost float64 // GPU-hours: (redone + suspend wait + resume) x 4 GPUs
			if w[0].Preemptions > 0 {
				wantLost = (22 + 30 + 16) * 4 / 3600.0
			}
			if d := sum.GPUHoursLost - wantLost; d > 1e-9 || d < -1e-9 {
				t.Errorf("GPU-hours lost %v, want %v", sum.GPUHoursLost, wantLost)
			}
		})
	}
	// Every registered policy (pickyman too) completes the trace with invariants on.
	for _, name := range policies.Names() {
		t.Run("all/"+name, func(t *testing.T) {
			p, err := policies.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, simtest.Cluster(1, 4), jobs, p, handConfig())
			for _, j := range r.Jobs {
				if j.Rejected || j.Finish < j.Submit+j.Service+15*s {
					t.Errorf("job %s: finish %v, submit %v, service %v: finished too early or never", j.ID, j.Finish, j.Submit, j.Service)
				}
			}
		})
	}
}
