package fifo_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies/fifo"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestSchedule(t *testing.T) {
	a8, b4 := utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 4).Obj()
	at := func(m int) time.Time { return utiltesting.At(time.Duration(m) * time.Minute) }
	slot := func(n string, w, g int32) []sched.Slot { return []sched.Slot{{Node: n, Workers: w, GPUs: g}} }
	cases := map[string]struct {
		backfill bool
		nodes    []sched.Node
		jobs     []*sched.Job
		want     sched.Decisions
	}{
		"arrival order, not priority": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("late").GPUs(1, 8).Priority(9).Submit(at(2)).Obj(),
				utiltesting.MakeJob("early").GPUs(1, 8).Submit(at(1)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "early", Placement: slot("a", 1, 8)}}},
		},
		"the head blocks the queue": {
			nodes: []sched.Node{a8, b4},
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 4).Running("a").Obj(),
				utiltesting.MakeJob("head").GPUs(1, 8).Submit(at(1)).Obj(),
				utiltesting.MakeJob("small").GPUs(1, 2).Submit(at(2)).Obj(),
			},
		},
		"backfill into GPUs the head does not need": {
			backfill: true,
			nodes:    []sched.Node{a8, b4},
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 4).Running("a").Obj(),
				utiltesting.MakeJob("head").GPUs(1, 8).Submit(at(1)).Obj(),  // shadow: all of a
				utiltesting.MakeJob("small").GPUs(1, 2).Submit(at(2)).Obj(), // b
				utiltesting.MakeJob("four").GPUs(1, 4).Submit(at(3)).Obj(),  // a's 4 free GPUs are the head's
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "small", Placement: slot("b", 1, 2)}}},
		},
		"jobs that never fit are skipped": {
			nodes: []sched.Node{a8},
			jobs: []*sched.Job{
				utiltesting.MakeJob("huge").GPUs(2, 8).Submit(at(1)).Obj(),
				utiltesting.MakeJob("ok").GPUs(1, 8).Submit(at(2)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "ok", Placement: slot("a", 1, 8)}}},
		},
		"a reserved job starts on its reservation": {
			nodes: []sched.Node{a8, b4},
			jobs: []*sched.Job{
				utiltesting.MakeJob("first").GPUs(1, 4).Submit(at(1)).Obj(),
				utiltesting.MakeJob("res").GPUs(1, 4).Submit(at(2)).Reserved("a").Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{
				{JobID: "first", Placement: slot("a", 1, 4)}, // a and b both have 4 free: a is first
				{JobID: "res", Placement: slot("a", 1, 4)},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(utiltesting.At(time.Hour)).Nodes(tc.nodes...).Jobs(tc.jobs...).Obj()
			got := fifo.New(fifo.Options{Backfill: tc.backfill}).Schedule(s)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Schedule (-want +got):\n%s", diff)
			}
			if err := sched.Validate(s, got); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
