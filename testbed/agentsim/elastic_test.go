package agentsim

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/pickyman/pickyman/agent/pkg/api"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// TestTrainerEpochFollowsItsSize: a simulated pod whose resume point gives an elastic job's
// size and reference size trains epochs of the Amdahl time (Physics.EpochTime); with Serial
// 0.1, half its reference size takes 1.9x as long, twice its reference 0.55x; at its
// reference size, or without sizes (a rigid job, or an old annotation), the epoch time is
// the pod's.
func TestTrainerEpochFollowsItsSize(t *testing.T) {
	tests := map[string]struct {
		world, reference int32
		want             time.Duration
	}{
		"half the reference size": {world: 2, reference: 4, want: 190 * time.Second},
		"the reference size":      {world: 4, reference: 4, want: 100 * time.Second},
		"twice the reference":     {world: 8, reference: 4, want: 55 * time.Second},
		"no sizes":                {want: 100 * time.Second},
		"no reference":            {world: 2, want: 100 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ph := DefaultPhysics()
			ph.NoiseSigma = 0
			if ph.Serial != 0.1 {
				t.Fatalf("default Serial %v, want 0.1", ph.Serial)
			}
			if got := ph.EpochTime(100*time.Second, tc.world, tc.reference); got != tc.want {
				t.Errorf("EpochTime = %v, want %v", got, tc.want)
			}

			// The same through a simulated process: start (50 s), then one epoch.
			clk := clocktesting.NewFakeClock(t0)
			reg := api.NewRegistry(clk, nil)
			pod := api.Pod{UID: "uid-e", Namespace: "ns", Name: "e",
				Resume: agentv1alpha1.ResumePoint{WorldSize: tc.world, ReferenceWorldSize: tc.reference}}
			reg.SetPod(pod)
			spec := Spec{Job: "ns/e", Epochs: 3, EpochTime: 100 * time.Second, GPUs: 1}
			caller := api.Caller{Session: 1, PID: 1, PodUID: pod.UID}
			tr, err := newTrainer(reg, pod, spec, "kwok-0", caller, jobNoise(1, spec.Job, 0), ph, 1, clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			step := func(d time.Duration) {
				t.Helper()
				clk.Step(d)
				if _, err := tr.step(context.Background(), reg, ph, 1, clk.Now()); err != nil {
					t.Fatal(err)
				}
			}
			step(50 * time.Second)
			step(tc.want - time.Millisecond)
			if p, _ := reg.Progress(pod.UID); p.EpochsDone != 0 {
				t.Fatalf("epoch ended before %v: %+v", tc.want, p)
			}
			step(time.Millisecond)
			p, _ := reg.Progress(pod.UID)
			if p.EpochsDone != 1 || p.EpochSeconds != tc.want.Seconds() {
				t.Errorf("progress %+v, want one epoch of %v", p, tc.want)
			}
		})
	}
}
