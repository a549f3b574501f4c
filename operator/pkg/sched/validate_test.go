package sched_test

import (
	"strings"
	"testing"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestValidate(t *testing.T) {
	nodes := []sched.Node{
		utiltesting.MakeNode("a", 8).Model("V100").Obj(),
		utiltesting.MakeNode("b", 8).Model("V100").Obj(),
		utiltesting.MakeNode("c", 8).Model("A100").Unschedulable().Obj(),
	}
	run := utiltesting.MakeJob("run").GPUs(1, 4).Running("a").Obj()
	susp := utiltesting.MakeJob("susp").GPUs(1, 4).Suspending(sched.SuspendNow, "res", "a").Obj()
	// a is full (run and susp); res holds all of b, susp is nominally freeing for res.
	res := utiltesting.MakeJob("res").GPUs(1, 8).Reserved("b").Obj()
	q1 := utiltesting.MakeJob("q1").GPUs(1, 8).Obj()
	q2 := utiltesting.MakeJob("q2").GPUs(2, 4).GPUModel("V100").Obj()
	q3 := utiltesting.MakeJob("q3").GPUs(1, 4).Obj()
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(nodes...).Jobs(run, susp, res, q1, q2, q3).Obj()

	slot := func(n string, w, g int32) sched.Slot { return sched.Slot{Node: n, Workers: w, GPUs: g} }
	cases := map[string]validateCase{
		"nothing": {},
		"reserved job starts on its reservation": {
			d: sched.Decisions{Starts: []sched.Start{{JobID: "res", Placement: []sched.Slot{slot("b", 1, 8)}}}},
		},
		"start on reserved GPUs of another job": {
			d:    sched.Decisions{Starts: []sched.Start{{JobID: "q1", Placement: []sched.Slot{slot("b", 1, 8)}}}},
			want: []string{"node b over-committed"},
		},
		"start on used GPUs": {
			d:    sched.Decisions{Starts: []sched.Start{{JobID: "q1", Placement: []sched.Slot{slot("a", 1, 8)}}}},
			want: []string{"node a over-committed"},
		},
		"start a running job": {
			d:    sched.Decisions{Starts: []sched.Start{{JobID: "run", Placement: []sched.Slot{slot("b", 1, 4)}}}},
			want: []string{"start run: job is Running"},
		},
		"unknown job and double start": {
			d: sched.Decisions{Starts: []sched.Start{
				{JobID: "nope", Placement: []sched.Slot{slot("b", 1, 1)}},
				{JobID: "res", Placement: []sched.Slot{slot("b", 1, 8)}},
				{JobID: "res", Placement: []sched.Slot{slot("b", 1, 8)}},
			}},
			want: []string{"start nope: unknown job", "start res: started twice"},
		},
		"wrong gang shape": {
			d:    sched.Decisions{Starts: []sched.Start{{JobID: "q2", Placement: []sched.Slot{slot("b", 1, 8)}}}},
			want: []string{"1 workers of 4 GPUs"},
		},
		"wrong model and unschedulable node": {
			d:    sched.Decisions{Starts: []sched.Start{{JobID: "q2", Placement: []sched.Slot{slot("c", 2, 8)}}}},
			want: []string{"unschedulable", "GPU model"},
		},
		"preempt a suspending job": {
			d:    sched.Decisions{Preemptions: []sched.Preemption{{JobID: "susp", Mode: sched.SuspendNow}}},
			want: []string{"preemption susp: job is Suspending"},
		},
		"preempt with a bad mode and for a running job": {
			d:    sched.Decisions{Preemptions: []sched.Preemption{{JobID: "run", Mode: "Later", For: "run"}}},
			want: []string{"unknown suspend mode", "not a queued job"},
		},
		"preempt and reserve": {
			d: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "run", Mode: sched.SuspendNow, For: "q3"}},
				Reservations: []sched.Reservation{{JobID: "q3", Placement: []sched.Slot{slot("a", 1, 4)}}},
			},
		},
		"reserve GPUs freed for another job": {
			d: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "run", Mode: sched.SuspendNow, For: "q1"}},
				Reservations: []sched.Reservation{{JobID: "q1", Placement: []sched.Slot{slot("a", 1, 8)}}},
			},
			want: []string{"node a over-committed"},
		},
		"reserve GPUs nobody frees": {
			d:    sched.Decisions{Reservations: []sched.Reservation{{JobID: "q1", Placement: []sched.Slot{slot("a", 1, 8)}}}},
			want: []string{"node a over-committed"},
		},
		"reserve a started job": {
			d: sched.Decisions{
				Starts:       []sched.Start{{JobID: "res", Placement: []sched.Slot{slot("b", 1, 8)}}},
				Reservations: []sched.Reservation{{JobID: "res", Placement: []sched.Slot{slot("b", 1, 8)}}},
			},
			want: []string{"reservation res: job is also started"},
		},
	}
	runValidateCases(t, s, cases)
}

// validateCase is decisions and the substrings Validate's error must contain (none: valid).
type validateCase struct {
	d    sched.Decisions
	want []string
}

func runValidateCases(t *testing.T, s *sched.Snapshot, cases map[string]validateCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := sched.Validate(s, tc.d)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestValidateToleratesOvercommittedSnapshot(t *testing.T) {
	// The snapshot itself promises 12 GPUs on a; deciding nothing there is not an error,
	// adding to it is.
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(utiltesting.MakeNode("a", 8).Used(12).Obj(), utiltesting.MakeNode("b", 8).Obj()).KeepUsed().
		Jobs(utiltesting.MakeJob("q").GPUs(1, 1).Obj()).Obj()
	if err := sched.Validate(s, sched.Decisions{}); err != nil {
		t.Errorf("Validate(nothing) = %v", err)
	}
	err := sched.Validate(s, sched.Decisions{Starts: []sched.Start{{JobID: "q", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 1}}}}})
	if err == nil || !strings.Contains(err.Error(), "node a over-committed") {
		t.Errorf("Validate(start on a) = %v, want over-committed", err)
	}
}
