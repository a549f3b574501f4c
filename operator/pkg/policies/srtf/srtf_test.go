package srtf_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies/srtf"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestSchedule(t *testing.T) {
	a8, b8 := utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()
	h := func(n int) time.Duration { return time.Duration(n) * time.Hour }
	slot := func(n string, w, g int32) []sched.Slot { return []sched.Slot{{Node: n, Workers: w, GPUs: g}} }
	preempt := func(id, forID string) sched.Preemption {
		return sched.Preemption{JobID: id, Mode: sched.SuspendNow, For: forID, Reason: srtf.Reason}
	}
	cases := map[string]struct {
		nodes []sched.Node
		jobs  []*sched.Job
		want  sched.Decisions
	}{
		"free GPUs first": {
			nodes: []sched.Node{a8, b8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Oracle(h(20), h(10)).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 8).Oracle(h(1), h(1)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "q", Placement: slot("b", 1, 8)}}},
		},
		"preempt the longest remaining": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r10").GPUs(1, 4).Oracle(h(20), h(10)).Running("a").Obj(),
				utiltesting.MakeJob("r5").GPUs(1, 4).Oracle(h(20), h(5)).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 4).Oracle(h(1), h(1)).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r10", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: slot("a", 1, 4)}},
			},
		},
		"only longer jobs are victims": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r10").GPUs(1, 4).Oracle(h(20), h(10)).Running("a").Obj(),
				utiltesting.MakeJob("r5").GPUs(1, 4).Oracle(h(20), h(5)).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 8).Oracle(h(7), h(7)).Obj(),
			},
		},
		"shortest queued job preempts first": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Oracle(h(20), h(10)).Running("a").Obj(),
				utiltesting.MakeJob("q2").GPUs(1, 8).Oracle(h(2), h(2)).Obj(),
				utiltesting.MakeJob("q1").GPUs(1, 8).Oracle(h(1), h(1)).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r", "q1")},
				Reservations: []sched.Reservation{{JobID: "q1", Placement: slot("a", 1, 8)}},
			},
		},
		// On a cluster there is no oracle: remaining is the user's estimate less the time run
		// (attained GPU time over GPUs). r has 10 h declared and ran 4 h on 4 GPUs: 6 h left,
		// longer than q's 5 h; r2 ran 8 h of its 10: 2 h left, not a victim.
		"declared estimates without an oracle": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 4).Estimate(h(10)).Attained(4 * h(4)).Running("a").Obj(),
				utiltesting.MakeJob("r2").GPUs(1, 4).Estimate(h(10)).Attained(4 * h(8)).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 4).Estimate(h(5)).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: slot("a", 1, 4)}},
			},
		},
		"a suspending job is not preempted again": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Oracle(h(20), h(10)).Suspending(sched.SuspendNow, "q1", "a").Obj(),
				utiltesting.MakeJob("q1").GPUs(1, 8).Oracle(h(1), h(1)).Reserved("a").Obj(),
				utiltesting.MakeJob("q2").GPUs(1, 8).Oracle(h(1), h(1)).Obj(),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(utiltesting.At(time.Hour)).Nodes(tc.nodes...).Jobs(tc.jobs...).Obj()
			got := srtf.New().Schedule(s)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Schedule (-want +got):\n%s", diff)
			}
			if err := sched.Validate(s, got); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
