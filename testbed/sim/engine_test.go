package sim

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
	"github.com/pickyman/pickyman/traces"
)

const s = time.Second

// handPhysics has round numbers: first start 15 s, resume 16 s (1 s checkpoint load),
// boundary checkpoint write 2 s, grace 30 s, no noise.
func handPhysics() Physics {
	return Physics{
		ContainerStart: 10 * s, WarmUp: 5 * s, Grace: 30 * s,
		WriteBandwidth: 1e9, ReadBandwidth: 2e9, CheckpointPeriod: 1,
	}
}

func handConfig() Config {
	c := DefaultConfig()
	c.Physics = handPhysics()
	c.Check = true
	return c
}

// delayed is handConfig with the control plane's start and finish delays.
func delayed(start, finish time.Duration) Config {
	c := handConfig()
	c.Physics.StartDelay, c.Physics.FinishDelay = start, finish
	return c
}

// suspendDelayed is handConfig with the control plane's suspend delay.
func suspendDelayed(d time.Duration) Config {
	c := handConfig()
	c.Physics.SuspendDelay = d
	return c
}

func run(t *testing.T, cluster traces.Cluster, jobs []traces.Job, p sched.Policy, cfg Config) *metrics.Run {
	t.Helper()
	e, err := New(cluster, jobs, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rec is the hand-checked part of a job record, in seconds.
type rec struct {
	ID                                     string
	Start, Finish, Held, Wait              float64
	Preemptions                            int32
	Redone, SuspendWait, Resume, StartOver float64
	Delay                                  float64
}

func recs(r *metrics.Run) []rec {
	var out []rec
	for i := range r.Jobs {
		j := &r.Jobs[i]
		out = append(out, rec{
			ID: j.ID, Start: j.FirstStart.Seconds(), Finish: j.Finish.Seconds(), Held: j.Held.Seconds(),
			Wait: j.Wait().Seconds(), Preemptions: j.Preemptions, Redone: j.RedoneWork.Seconds(),
			SuspendWait: j.SuspendWait.Seconds(), Resume: j.ResumeOverhead.Seconds(),
			StartOver: j.StartOverhead.Seconds(), Delay: j.SuspendDelay.Seconds(),
		})
	}
	return out
}

// twoJobs: a (4 GPUs, 100 s, 10 epochs of 10 s, 2 GB checkpoint) at 0; b (4 GPUs, 50 s,
// priority 10) at 37 s, on one 4-GPU node.
func twoJobs() []traces.Job {
	return []traces.Job{
		simtest.MakeTraceJob("a").Gang(1, 4).Duration(100 * s).Epochs(10).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("b").Gang(2, 2).Duration(50 * s).Epochs(5).Checkpoint(2e9).Priority(10).Submit(37 * s).Obj(),
	}
}

func TestEngineHandTraces(t *testing.T) {
	ideal := handConfig()
	ideal.Physics.Ideal = true
	cases := map[string]struct {
		jobs   []traces.Job
		policy sched.Policy
		cfg    Config
		want   []rec
	}{
		// a starts at 0, runs from 15 (start overhead), ends at 115; b waits for it, starts
		// at 115, runs from 130, ends at 180.
		"fifo waits": {
			jobs:   twoJobs(),
			policy: simtest.NewFIFO(),
			cfg:    handConfig(),
			want: []rec{
				{ID: "a", Start: 0, Finish: 115, Held: 115, Wait: 0, StartOver: 15},
				{ID: "b", Start: 115, Finish: 180, Held: 65, Wait: 78, StartOver: 15},
			},
		},
		// At 37 a has 22 s of progress (checkpoint at 20): suspend now loses 2 s and frees
		// the GPUs after the 30 s grace period, at 67. b runs 67..132 (15 s start). a
		// resumes at 132, pays 16 s (10 + 1 s load + 5) and redoes from 20: 80 s, ends 228.
		"preempt now": {
			jobs:   twoJobs(),
			policy: simtest.NewPriority(sched.SuspendNow),
			cfg:    handConfig(),
			want: []rec{
				{ID: "a", Start: 0, Finish: 228, Held: 163, Wait: 65, Preemptions: 1, Redone: 2, SuspendWait: 30, Resume: 16, StartOver: 15, Delay: 30},
				{ID: "b", Start: 67, Finish: 132, Held: 65, Wait: 30, StartOver: 15},
			},
		},
		// At 37 a runs on to its epoch end at 30 s of progress (t=45), writes 2 s, frees at
		// 47. b runs 47..112. a resumes at 112 (16 s), does the last 70 s, ends 198.
		"preempt at boundary": {
			jobs:   twoJobs(),
			policy: simtest.NewPriority(sched.SuspendBoundary),
			cfg:    handConfig(),
			want: []rec{
				{ID: "a", Start: 0, Finish: 198, Held: 133, Wait: 65, Preemptions: 1, SuspendWait: 2, Resume: 16, StartOver: 15, Delay: 10},
				{ID: "b", Start: 47, Finish: 112, Held: 65, Wait: 10, StartOver: 15},
			},
		},
		// Ideal: nothing costs anything. a is suspended at 37 with 37 s done and resumes
		// at 87 with 63 s to go.
		"ideal preempt now": {
			jobs:   twoJobs(),
			policy: simtest.NewPriority(sched.SuspendNow),
			cfg:    ideal,
			want: []rec{
				{ID: "a", Start: 0, Finish: 150, Held: 100, Wait: 50, Preemptions: 1},
				{ID: "b", Start: 37, Finish: 87, Held: 50, Wait: 0},
			},
		},
		// b arrives at 5 s while a warms up (no progress since its checkpoint): a boundary
		// suspend frees the GPUs at once, a's 5 s of start overhead are spent. a resumes at
		// 75 (b: 5..75) and runs 91..191.
		"boundary during warm-up": {
			jobs: []traces.Job{
				simtest.MakeTraceJob("a").Gang(1, 4).Duration(100 * s).Epochs(10).Checkpoint(2e9).Obj(),
				simtest.MakeTraceJob("b").Gang(1, 4).Duration(55 * s).Priority(10).Submit(5 * s).Obj(),
			},
			policy: simtest.NewPriority(sched.SuspendBoundary),
			cfg:    handConfig(),
			want: []rec{
				{ID: "a", Start: 0, Finish: 191, Held: 121, Wait: 70, Preemptions: 1, StartOver: 5, Resume: 16},
				{ID: "b", Start: 5, Finish: 75, Held: 70, Wait: 0, StartOver: 15},
			},
		},
		// The boundary of a's current epoch is its end: a finishes at 115 instead of
		// suspending; b starts then.
		"boundary at the last epoch": {
			jobs: []traces.Job{
				simtest.MakeTraceJob("a").Gang(1, 4).Duration(100 * s).Epochs(2).Checkpoint(2e9).Obj(),
				simtest.MakeTraceJob("b").Gang(1, 4).Duration(50 * s).Priority(10).Submit(80 * s).Obj(),
			},
			policy: simtest.NewPriority(sched.SuspendBoundary),
			cfg:    handConfig(),
			want: []rec{
				{ID: "a", Start: 0, Finish: 115, Held: 115, StartOver: 15},
				{ID: "b", Start: 115, Finish: 180, Held: 65, Wait: 35, StartOver: 15},
			},
		},
		// "preempt now" with the control plane's 8 s suspend delay: a's GPUs free at 37 + 30 +
		// 8 = 75. b runs 75..140; a resumes at 140 (16 s), redoes from 20, ends 236.
		"preempt now with a suspend delay": {
			jobs:   twoJobs(),
			policy: simtest.NewPriority(sched.SuspendNow),
			cfg:    suspendDelayed(8 * s),
			want: []rec{
				{ID: "a", Start: 0, Finish: 236, Held: 171, Wait: 65, Preemptions: 1, Redone: 2, SuspendWait: 38, Resume: 16, StartOver: 15, Delay: 38},
				{ID: "b", Start: 75, Finish: 140, Held: 65, Wait: 38, StartOver: 15},
			},
		},
		// "preempt at boundary" with it: a's checkpoint is written at 47, its GPUs free at 55.
		// b runs 55..120; a resumes at 120 (16 s), does the last 70 s, ends 206.
		"preempt at boundary with a suspend delay": {
			jobs:   twoJobs(),
			policy: simtest.NewPriority(sched.SuspendBoundary),
			cfg:    suspendDelayed(8 * s),
			want: []rec{
				{ID: "a", Start: 0, Finish: 206, Held: 141, Wait: 65, Preemptions: 1, SuspendWait: 10, Resume: 16, StartOver: 15, Delay: 18},
				{ID: "b", Start: 55, Finish: 120, Held: 65, Wait: 18, StartOver: 15},
			},
		},
		// The control plane's delays (start 3 s, finish 2 s): a's containers start at 3, it
		// runs from 18, its training ends at 118 and its GPUs free at 120; b likewise from 120.
		"fifo with control-plane delays": {
			jobs:   twoJobs(),
			policy: simtest.NewFIFO(),
			cfg:    delayed(3*s, 2*s),
			want: []rec{
				{ID: "a", Start: 0, Finish: 120, Held: 120, Wait: 0, StartOver: 18},
				{ID: "b", Start: 120, Finish: 190, Held: 70, Wait: 83, StartOver: 18},
			},
		},
		// b arrives at 118, after a's training ended at 115 and before the control plane has
		// seen it finish (125): the boundary suspend is a's finish, b starts at 125.
		"boundary during the finish delay": {
			jobs: []traces.Job{
				simtest.MakeTraceJob("a").Gang(1, 4).Duration(100 * s).Epochs(2).Checkpoint(2e9).Obj(),
				simtest.MakeTraceJob("b").Gang(1, 4).Duration(50 * s).Priority(10).Submit(118 * s).Obj(),
			},
			policy: simtest.NewPriority(sched.SuspendBoundary),
			cfg:    delayed(0, 10*s),
			want: []rec{
				{ID: "a", Start: 0, Finish: 125, Held: 125, StartOver: 15},
				{ID: "b", Start: 125, Finish: 200, Held: 75, Wait: 7, StartOver: 15},
			},
		},
		// Two nodes, 1-GPU jobs, FIFO packs them: c waits for a.
		"fifo packs two nodes": {
			jobs: []traces.Job{
				simtest.MakeTraceJob("a").Gang(1, 2).Duration(30 * s).Obj(),
				simtest.MakeTraceJob("b").Gang(1, 2).Duration(60 * s).Obj(),
				simtest.MakeTraceJob("c").Gang(2, 1).Duration(10 * s).Submit(1 * s).Obj(),
			},
			policy: simtest.NewFIFO(),
			cfg:    ideal,
			want: []rec{
				{ID: "a", Start: 0, Finish: 30, Held: 30},
				{ID: "b", Start: 0, Finish: 60, Held: 60},
				{ID: "c", Start: 30, Finish: 40, Held: 10, Wait: 29},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cluster := simtest.Cluster(1, 4)
			if name == "fifo packs two nodes" {
				cluster = simtest.Cluster(2, 2)
			}
			got := recs(run(t, cluster, tc.jobs, tc.policy, tc.cfg))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}
