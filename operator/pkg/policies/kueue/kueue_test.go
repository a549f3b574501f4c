package kueue_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies/kueue"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestSchedule(t *testing.T) {
	a8, b8 := utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()
	at := func(m int) time.Time { return utiltesting.At(time.Duration(m) * time.Minute) }
	slot := func(n string, w, g int32) []sched.Slot { return []sched.Slot{{Node: n, Workers: w, GPUs: g}} }
	preempt := func(id, forID string) sched.Preemption {
		return sched.Preemption{JobID: id, Mode: sched.SuspendNow, For: forID, Reason: kueue.Reason}
	}
	cases := map[string]struct {
		nodes []sched.Node
		jobs  []*sched.Job
		want  sched.Decisions
	}{
		"priority, then submit time": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("low").GPUs(1, 4).Priority(0).Submit(at(1)).Obj(),
				utiltesting.MakeJob("high-late").GPUs(1, 4).Priority(5).Submit(at(3)).Obj(),
				utiltesting.MakeJob("high-early").GPUs(1, 4).Priority(5).Submit(at(2)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{
				{JobID: "high-early", Placement: slot("a", 1, 4)},
				{JobID: "high-late", Placement: slot("a", 1, 4)},
			}},
		},
		"lowest priority, most recently admitted victim": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("old").GPUs(1, 4).Priority(0).Started(at(1)).Running("a").Obj(),
				utiltesting.MakeJob("new").GPUs(1, 4).Priority(0).Started(at(2)).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 4).Priority(2).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("new", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: slot("a", 1, 4)}},
			},
		},
		"only strictly lower priorities": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Priority(1).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 8).Priority(1).Obj(),
			},
		},
		"unneeded victims are dropped": {
			// Candidates in order: r0 (priority 0, on b), r1 (priority 1, all of a). r0 alone
			// frees 2 GPUs on b, where r2 (priority 2) keeps the rest; r1 frees a, enough.
			nodes: []sched.Node{a8, b8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r0").GPUs(1, 2).Priority(0).Running("b").Obj(),
				utiltesting.MakeJob("r2").GPUs(1, 6).Priority(2).Running("b").Obj(),
				utiltesting.MakeJob("r1").GPUs(1, 8).Priority(1).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 8).Priority(2).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r1", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: slot("a", 1, 8)}},
			},
		},
		"a gang takes several victims": {
			nodes: []sched.Node{a8, b8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("ra").GPUs(1, 8).Priority(0).Running("a").Obj(),
				utiltesting.MakeJob("rb").GPUs(1, 8).Priority(0).Running("b").Obj(),
				utiltesting.MakeJob("q").GPUs(2, 8).Priority(1).Obj(),
			},
			want: sched.Decisions{
				Preemptions: []sched.Preemption{preempt("ra", "q"), preempt("rb", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{
					{Node: "a", Workers: 1, GPUs: 8}, {Node: "b", Workers: 1, GPUs: 8},
				}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(utiltesting.At(time.Hour)).Nodes(tc.nodes...).Jobs(tc.jobs...).Obj()
			got := kueue.New().Schedule(s)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Schedule (-want +got):\n%s", diff)
			}
			if err := sched.Validate(s, got); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
