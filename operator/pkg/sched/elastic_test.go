package sched_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func slot(n string, w, g int32) sched.Slot { return sched.Slot{Node: n, Workers: w, GPUs: g} }

func TestResizeHelpers(t *testing.T) {
	old := []sched.Slot{slot("a", 4, 8), slot("b", 2, 4)}
	target := []sched.Slot{slot("a", 2, 4), slot("c", 1, 2)}
	if diff := cmp.Diff([]sched.Slot{slot("a", 2, 4), slot("b", 2, 4)}, sched.Freed(old, target)); diff != "" {
		t.Errorf("Freed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sched.Slot{slot("c", 1, 2)}, sched.Added(old, target)); diff != "" {
		t.Errorf("Added (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]sched.Slot{slot("a", 4, 8), slot("b", 2, 4), slot("c", 1, 2)}, sched.Union(old, target)); diff != "" {
		t.Errorf("Union (-want +got):\n%s", diff)
	}
	j := utiltesting.MakeJob("e").GPUs(6, 2).Suspending(sched.SuspendBoundary, "q", "a", "a", "a", "a", "b", "b").Obj()
	j.Suspend.Resize = target
	if got := sched.FreedOn(j, "a"); got != 4 {
		t.Errorf("FreedOn(a) = %d, want 4 (8 held, 4 kept)", got)
	}
	if got := sched.FreedOn(j, "c"); got != 0 {
		t.Errorf("FreedOn(c) = %d, want 0", got)
	}
}

func TestCheckShapeElastic(t *testing.T) {
	e := utiltesting.MakeJob("e").GPUs(4, 2).Elastic(2, 8).Obj()
	for workers, ok := range map[int32]bool{1: false, 2: true, 4: true, 8: true, 9: false} {
		err := sched.CheckShape(e, []sched.Slot{slot("a", workers, 2*workers)})
		if (err == nil) != ok {
			t.Errorf("%d workers: err = %v, want ok %v", workers, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "elastic job runs on 2 to 8") {
			t.Errorf("%d workers: error %q does not name the bounds", workers, err)
		}
	}
}

func TestValidateResize(t *testing.T) {
	nodes := []sched.Node{
		utiltesting.MakeNode("a", 8).Used(8).Obj(),
		utiltesting.MakeNode("b", 8).Used(4).Obj(),
	}
	// e: 4 workers of 2 GPUs on a, elastic 2..8; r: rigid, 4 GPUs on b; q waits for 4.
	e := utiltesting.MakeJob("e").GPUs(4, 2).Elastic(2, 8).Running("a", "a", "a", "a").Obj()
	r := utiltesting.MakeJob("r").GPUs(1, 4).Running("b").Obj()
	q := utiltesting.MakeJob("q").GPUs(1, 4).Obj()
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(nodes...).Jobs(e, r, q).Obj()
	shrink := sched.Preemption{JobID: "e", Mode: sched.SuspendBoundary, For: "q", Resize: []sched.Slot{slot("a", 2, 4)}}
	reserveA := sched.Reservation{JobID: "q", Placement: []sched.Slot{slot("a", 1, 4)}}
	cases := map[string]validateCase{
		"shrink frees the GPUs q is reserved": {
			d: sched.Decisions{Preemptions: []sched.Preemption{shrink}, Reservations: []sched.Reservation{reserveA}},
		},
		"without the shrink the reservation over-commits": {
			d:    sched.Decisions{Reservations: []sched.Reservation{reserveA}},
			want: []string{"node a over-committed"},
		},
		"a shrink that keeps too much": {
			d: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, For: "q", Resize: []sched.Slot{slot("a", 3, 6)}}},
				Reservations: []sched.Reservation{reserveA},
			},
			want: []string{"node a over-committed"},
		},
		"below the minimum": {
			d:    sched.Decisions{Preemptions: []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, Resize: []sched.Slot{slot("a", 1, 2)}}}},
			want: []string{"resize e: placement has 1 workers, elastic job runs on 2 to 8"},
		},
		"a rigid job": {
			d:    sched.Decisions{Preemptions: []sched.Preemption{{JobID: "r", Mode: sched.SuspendBoundary, Resize: []sched.Slot{slot("b", 1, 4)}}}},
			want: []string{"resize r: job is not elastic"},
		},
		"now mode": {
			d:    sched.Decisions{Preemptions: []sched.Preemption{{JobID: "e", Mode: sched.SuspendNow, Resize: []sched.Slot{slot("a", 2, 4)}}}},
			want: []string{"a resize checkpoints at the boundary"},
		},
		"grow into free GPUs": {
			d: sched.Decisions{Preemptions: []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, Resize: []sched.Slot{slot("a", 4, 8), slot("b", 2, 4)}}}},
		},
		"grow beyond the free GPUs": {
			d:    sched.Decisions{Preemptions: []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, Resize: []sched.Slot{slot("a", 4, 8), slot("b", 3, 6)}}}},
			want: []string{"node b over-committed"},
		},
		"grow and start on the same GPUs": {
			d: sched.Decisions{
				Preemptions: []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, Resize: []sched.Slot{slot("a", 4, 8), slot("b", 2, 4)}}},
				Starts:      []sched.Start{{JobID: "q", Placement: []sched.Slot{slot("b", 1, 4)}}},
			},
			want: []string{"node b over-committed"},
		},
	}
	runValidateCases(t, s, cases)
}

// A job suspending for a resize holds its kept GPUs through the resize: a reservation on
// them for another job over-commits, one on the GPUs it gives back does not.
func TestIndexHoldResizing(t *testing.T) {
	e := utiltesting.MakeJob("e").GPUs(4, 2).Elastic(2, 8).Suspending(sched.SuspendBoundary, "q", "a", "a", "a", "a").Obj()
	e.Suspend.Resize = []sched.Slot{slot("a", 2, 4)}
	q := utiltesting.MakeJob("q").GPUs(1, 4).Reserved("a").Obj()
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(utiltesting.MakeNode("a", 8).Used(8).Obj()).Jobs(e, q).Obj()
	ix := sched.NewIndex(s)
	if h := ix.Hold(q); len(h) != 0 {
		t.Errorf("Hold(q) = %v, want nothing held: e gives back the 4 GPUs q reserved", h)
	}
	q2 := utiltesting.MakeJob("q").GPUs(1, 6).Obj()
	q2.Reserved = []sched.Slot{slot("a", 1, 6)}
	s.Jobs[1] = q2
	if h := sched.NewIndex(s).Hold(q2); sched.PlacementGPUs(h) != 2 {
		t.Errorf("Hold(q) = %v, want 2 GPUs held beyond the 4 e gives back", h)
	}
}
