package sched_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestPlaceGang(t *testing.T) {
	cases := map[string]struct {
		nodes []sched.Node
		jobs  []*sched.Job // running jobs, to fill nodes
		job   *sched.Job
		want  []sched.Slot
	}{
		"best fit single node": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj(), utiltesting.MakeNode("c", 8).Obj()},
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 4).Running("b").Obj(),
				utiltesting.MakeJob("y").GPUs(1, 6).Running("c").Obj(),
			},
			job:  utiltesting.MakeJob("q").GPUs(1, 2).Obj(),
			want: []sched.Slot{{Node: "c", Workers: 1, GPUs: 2}},
		},
		"ties go to the first node": {
			nodes: []sched.Node{utiltesting.MakeNode("b", 8).Obj(), utiltesting.MakeNode("a", 8).Obj()},
			job:   utiltesting.MakeJob("q").GPUs(2, 2).Obj(),
			want:  []sched.Slot{{Node: "a", Workers: 2, GPUs: 4}},
		},
		"whole gang on one node when it fits": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()},
			jobs:  []*sched.Job{utiltesting.MakeJob("x").GPUs(1, 4).Running("a").Obj()},
			job:   utiltesting.MakeJob("q").GPUs(4, 2).Obj(),
			want:  []sched.Slot{{Node: "b", Workers: 4, GPUs: 8}},
		},
		"fewest nodes, tightest tail": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj(), utiltesting.MakeNode("c", 8).Obj(), utiltesting.MakeNode("d", 8).Obj()},
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 2).Running("a").Obj(), // a: 6 free
				utiltesting.MakeJob("y").GPUs(1, 6).Running("b").Obj(), // b: 2 free
				utiltesting.MakeJob("z").GPUs(1, 4).Running("c").Obj(), // c: 4 free
				// d: 8 free
			},
			job:  utiltesting.MakeJob("q").GPUs(5, 2).Obj(), // 10 GPUs: d takes 4 workers, 1 more on b (tightest)
			want: []sched.Slot{{Node: "d", Workers: 4, GPUs: 8}, {Node: "b", Workers: 1, GPUs: 2}},
		},
		"workers never span nodes": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()},
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 5).Running("a").Obj(),
				utiltesting.MakeJob("y").GPUs(1, 5).Running("b").Obj(),
			},
			job: utiltesting.MakeJob("q").GPUs(1, 4).Obj(), // 6 free GPUs in all, but 3 per node
		},
		"GPU model respected": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Model("V100").Obj(), utiltesting.MakeNode("b", 4).Model("A100").Obj()},
			job:   utiltesting.MakeJob("q").GPUs(1, 4).GPUModel("V100").Obj(),
			want:  []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}},
		},
		"any model picks the tightest model group": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Model("V100").Obj(), utiltesting.MakeNode("b", 4).Model("A100").Obj()},
			job:   utiltesting.MakeJob("q").GPUs(1, 4).Obj(),
			want:  []sched.Slot{{Node: "b", Workers: 1, GPUs: 4}},
		},
		"any model does not mix models": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 4).Model("V100").Obj(), utiltesting.MakeNode("b", 4).Model("A100").Obj()},
			job:   utiltesting.MakeJob("q").GPUs(2, 4).Obj(),
		},
		"unschedulable nodes take nothing": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Unschedulable().Obj(), utiltesting.MakeNode("b", 8).Obj()},
			job:   utiltesting.MakeJob("q").GPUs(2, 4).Obj(),
			want:  []sched.Slot{{Node: "b", Workers: 2, GPUs: 8}},
		},
		"reserved GPUs are not free": {
			nodes: []sched.Node{utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()},
			jobs:  []*sched.Job{utiltesting.MakeJob("r").GPUs(1, 8).Reserved("a").Obj()},
			job:   utiltesting.MakeJob("q").GPUs(2, 8).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(tc.nodes...).Jobs(tc.jobs...).Obj()
			got, ok := sched.NewView(s, nil).PlaceGang(tc.job)
			if ok != (tc.want != nil) {
				t.Fatalf("PlaceGang ok = %v, want %v (placement %v)", ok, tc.want != nil, got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PlaceGang (-want +got):\n%s", diff)
			}
		})
	}
}

func TestViewReservations(t *testing.T) {
	// q holds a reservation of a (8 GPUs): 4 GPUs already free, 4 still held by v, which is
	// suspending for q. Only b's 8 GPUs are free for others.
	q := utiltesting.MakeJob("q").GPUs(1, 8).Reserved("a").Obj()
	v := utiltesting.MakeJob("v").GPUs(1, 4).Suspending(sched.SuspendNow, "q", "a").Obj()
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()).Jobs(q, v).Obj()
	ix := sched.NewIndex(s)
	if diff := cmp.Diff([]sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}, ix.Hold(q)); diff != "" {
		t.Errorf("Hold (-want +got):\n%s", diff)
	}
	view := sched.NewView(s, ix)
	if got := view.Free("a"); got != 0 {
		t.Errorf("Free(a) = %d, want 0", got)
	}
	if got := view.FreeGPUs(""); got != 8 {
		t.Errorf("FreeGPUs = %d, want 8", got)
	}
	if view.StartReserved(q) {
		t.Errorf("StartReserved(q) started while v still holds 4 GPUs")
	}
	if got := view.Free("a"); got != 0 {
		t.Errorf("after a failed StartReserved, Free(a) = %d, want 0", got)
	}
	// Once v is gone the reservation starts.
	s2 := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()).Jobs(q).Obj()
	view2 := sched.NewView(s2, nil)
	if !view2.StartReserved(q) {
		t.Fatalf("StartReserved(q) did not start on a free reservation")
	}
	if got := view2.Free("a"); got != 0 {
		t.Errorf("after StartReserved, Free(a) = %d, want 0", got)
	}
}

func TestEverFits(t *testing.T) {
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(
		utiltesting.MakeNode("a", 8).Model("V100").Obj(),
		utiltesting.MakeNode("b", 8).Model("V100").Obj(),
		utiltesting.MakeNode("c", 4).Model("A100").Obj(),
		utiltesting.MakeNode("d", 8).Model("A100").Unschedulable().Obj(),
	).Jobs(utiltesting.MakeJob("x").GPUs(1, 8).Running("a").Obj()).Obj()
	v := sched.NewView(s, nil)
	cases := map[string]struct {
		job  *sched.Job
		want bool
	}{
		"fits busy cluster":          {utiltesting.MakeJob("q").GPUs(2, 8).Obj(), true},
		"more than any model has":    {utiltesting.MakeJob("q").GPUs(3, 8).Obj(), false},
		"worker larger than nodes":   {utiltesting.MakeJob("q").GPUs(1, 16).Obj(), false},
		"model with small nodes":     {utiltesting.MakeJob("q").GPUs(1, 8).GPUModel("A100").Obj(), false},
		"unknown model":              {utiltesting.MakeJob("q").GPUs(1, 1).GPUModel("H100").Obj(), false},
		"zero workers is never fine": {utiltesting.MakeJob("q").GPUs(0, 1).Obj(), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := v.EverFits(tc.job); got != tc.want {
				t.Errorf("EverFits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFindVictims(t *testing.T) {
	nodes := []sched.Node{utiltesting.MakeNode("a", 8).Obj(), utiltesting.MakeNode("b", 8).Obj()}
	x := utiltesting.MakeJob("x").GPUs(1, 4).Running("a").Obj()
	y := utiltesting.MakeJob("y").GPUs(1, 4).Running("a").Obj()
	z := utiltesting.MakeJob("z").GPUs(1, 2).Running("b").Obj()
	w := utiltesting.MakeJob("w").GPUs(1, 6).Running("b").Obj()
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).Nodes(nodes...).Jobs(x, y, z, w).Obj()
	cases := map[string]struct {
		job         *sched.Job
		cands       []*sched.Job
		wantVictims []string
		wantPlace   []sched.Slot
	}{
		"first candidates taken, unneeded dropped": {
			// z frees 2 on b, x 4 on a, w the other 6 on b: b fits; x turns out unneeded.
			job:         utiltesting.MakeJob("q").GPUs(1, 8).Obj(),
			cands:       []*sched.Job{z, x, w},
			wantVictims: []string{"z", "w"},
		},
		"needs two victims": {
			job:         utiltesting.MakeJob("q").GPUs(2, 8).Obj(),
			cands:       []*sched.Job{x, y, z, w},
			wantVictims: []string{"x", "y", "z", "w"},
		},
		"infeasible": {
			job:   utiltesting.MakeJob("q").GPUs(3, 8).Obj(),
			cands: []*sched.Job{x, y, z, w},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := sched.NewView(s, nil)
			victims, placement, ok := v.FindVictims(tc.job, tc.cands)
			if ok != (tc.wantVictims != nil) {
				t.Fatalf("ok = %v, want %v", ok, tc.wantVictims != nil)
			}
			var ids []string
			for _, j := range victims {
				ids = append(ids, j.ID)
			}
			if diff := cmp.Diff(tc.wantVictims, ids); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if ok {
				if err := sched.CheckShape(tc.job, placement); err != nil {
					t.Errorf("placement %v: %v", placement, err)
				}
			}
			if v.FreeGPUs("") != 0 {
				t.Errorf("FindVictims changed the view: %d free", v.FreeGPUs(""))
			}
		})
	}
}
