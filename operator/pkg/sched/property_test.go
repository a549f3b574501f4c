package sched_test

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

const propertyIterations = 500

// freeBrute computes each node's free GPUs straight from the snapshot: GPUs - Used - the
// holds of reservations.
func freeBrute(s *sched.Snapshot) map[string]int32 {
	ix := sched.NewIndex(s)
	held := ix.ReservedOn()
	free := make(map[string]int32, len(s.Nodes))
	for _, n := range s.Nodes {
		free[n.Name] = n.GPUs - n.Used - held[n.Name]
	}
	return free
}

func TestRandomSnapshotsAreConsistent(t *testing.T) {
	for seed := uint64(0); seed < propertyIterations; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
		if err := sched.Validate(s, sched.Decisions{}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for n, f := range freeBrute(s) {
			if f < 0 {
				t.Fatalf("seed %d: node %s over-committed by %d", seed, n, -f)
			}
		}
	}
}

func TestPlaceGangProperties(t *testing.T) {
	for seed := uint64(0); seed < propertyIterations; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
		free := freeBrute(s)
		view := sched.NewView(s, nil)
		for _, j := range s.Jobs {
			if j.Phase != sched.Queued {
				continue
			}
			pl, ok := view.PlaceGang(j)
			if want := utiltesting.FitsBrute(s, free, j); ok != want {
				t.Fatalf("seed %d job %s %dx%d: PlaceGang ok = %v, brute force says %v", seed, j.ID, j.Workers, j.GPUsPerWorker, ok, want)
			}
			if !ok {
				continue
			}
			d := sched.Decisions{Starts: []sched.Start{{JobID: j.ID, Placement: pl}}}
			if len(j.Reserved) > 0 {
				continue // its own hold makes a different start valid; covered by policies
			}
			if err := sched.Validate(s, d); err != nil {
				t.Fatalf("seed %d: placement of %s invalid: %v", seed, j.ID, err)
			}
			again, _ := view.PlaceGang(j)
			if len(again) != len(pl) || again[0] != pl[0] {
				t.Fatalf("seed %d: PlaceGang not deterministic: %v then %v", seed, pl, again)
			}
		}
	}
}

func TestFindVictimsMinimal(t *testing.T) {
	for seed := uint64(0); seed < propertyIterations; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
		ix := sched.NewIndex(s)
		view := sched.NewView(s, ix)
		for _, q := range ix.Queued {
			if len(q.Reserved) > 0 || len(ix.FreeingFor(q.ID)) > 0 {
				continue
			}
			if _, ok := view.PlaceGang(q); ok {
				continue
			}
			victims, pl, ok := view.FindVictims(q, ix.Running)
			if !ok {
				continue
			}
			d := sched.Decisions{Reservations: []sched.Reservation{{JobID: q.ID, Placement: pl}}}
			for _, v := range victims {
				d.Preemptions = append(d.Preemptions, sched.Preemption{JobID: v.ID, Mode: sched.SuspendNow, For: q.ID})
			}
			if err := sched.Validate(s, d); err != nil {
				t.Fatalf("seed %d: victims for %s: %v", seed, q.ID, err)
			}
			// Minimal: without any one victim, q does not fit.
			for skip := range victims {
				free := freeBrute(s)
				for i, v := range victims {
					if i == skip {
						continue
					}
					for _, sl := range v.Placement {
						free[sl.Node] += sl.GPUs
					}
				}
				if utiltesting.FitsBrute(s, free, q) {
					t.Fatalf("seed %d: victim %s of %s is not needed", seed, victims[skip].ID, q.ID)
				}
			}
		}
	}
}

func BenchmarkPlaceGang(b *testing.B) {
	s := utiltesting.RandomSnapshot(1, utiltesting.RandomConfig{Nodes: 300, GPUsPerNode: 8, Running: 2000, Queued: 5000})
	ix := sched.NewIndex(s)
	view := sched.NewView(s, ix)
	queued := ix.Queued
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		view.PlaceGang(queued[i%len(queued)])
	}
}

// TestScratchMatchesFresh: a Scratch reused over a sequence of different snapshots indexes
// and plans each exactly as a fresh NewIndex and NewPlan do (nothing of the previous
// snapshot leaks into the next), and SortInto sorts as Sorted does.
func TestScratchMatchesFresh(t *testing.T) {
	var sc sched.Scratch
	var buf []*sched.Job
	ids := func(js []*sched.Job) []string {
		out := make([]string, len(js))
		for i, j := range js {
			out[i] = j.ID
		}
		return out
	}
	for seed := uint64(0); seed < propertyIterations; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
		fresh, reused := sched.NewIndex(s), sc.Index(s)
		for _, c := range []struct {
			what string
			a, b []*sched.Job
		}{{"queued", fresh.Queued, reused.Queued}, {"running", fresh.Running, reused.Running}, {"suspending", fresh.Suspending, reused.Suspending}} {
			if !slices.Equal(ids(c.a), ids(c.b)) {
				t.Fatalf("seed %d: %s %v, reused scratch %v", seed, c.what, ids(c.a), ids(c.b))
			}
		}
		if a, b := fresh.ReservedOn(), reused.ReservedOn(); !maps.Equal(a, b) {
			t.Fatalf("seed %d: reserved %v, reused scratch %v", seed, a, b)
		}
		pa, pb := sched.NewPlan(s), sc.NewPlan(s)
		pa.AdmitReserved()
		pb.AdmitReserved()
		for _, j := range pa.Index.Queued {
			pa.Admit(j)
			pb.Admit(pb.Index.Job(j.ID))
		}
		if a, b := pa.Decisions(), pb.Decisions(); !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: decisions %+v, reused scratch %+v", seed, a, b)
		}
		buf = sched.SortInto(buf, s.Jobs, sched.CompareArrival)
		if want := sched.Sorted(s.Jobs, sched.CompareArrival); !slices.Equal(ids(want), ids(buf)) {
			t.Fatalf("seed %d: SortInto %v, Sorted %v", seed, ids(buf), ids(want))
		}
	}
}

// TestPreemptiveClassMatchesSearch checks that Preemptive.Run with Class (each class's
// prefix of candidates found once) decides exactly as without it (a prefix per queued job),
// on random snapshots where priorities are classes and preemption is frequent.
func TestPreemptiveClassMatchesSearch(t *testing.T) {
	preempted := 0
	for seed := uint64(0); seed < propertyIterations; seed++ {
		r := rand.New(rand.NewPCG(seed, 4))
		s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
		for _, j := range s.Jobs {
			j.Priority = int32(r.IntN(3))
		}
		run := func(class bool) sched.Decisions {
			p := sched.NewPlan(s)
			queue := sched.Sorted(p.Index.Queued, func(a, b *sched.Job) int {
				if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
					return c
				}
				return sched.CompareArrival(a, b)
			})
			cands := sched.Sorted(p.Index.Running, func(a, b *sched.Job) int {
				if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
					return c
				}
				return cmp.Compare(a.ID, b.ID)
			})
			pre := sched.Preemptive{
				Queue: queue, Candidates: cands, Mode: sched.SuspendNow, Reason: "test",
				CanPreempt: func(q, v *sched.Job) bool { return v.Priority < q.Priority },
			}
			if class {
				pre.Class = func(q *sched.Job) int { return int(q.Priority) }
			}
			return pre.Run(p)
		}
		want, got := run(false), run(true)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("seed %d: with Class %+v, without %+v", seed, got, want)
		}
		preempted += len(got.Preemptions)
	}
	if preempted == 0 {
		t.Fatal("no snapshot led to a preemption: the test compares nothing")
	}
	t.Logf("%d preemptions compared", preempted)
}

// TestKeySorterMatchesSorted checks KeySorter against Sorted with the same order (key, then
// CompareArrival), on random snapshots whose jobs share submit times and keys, with memory
// reused from sort to sort.
func TestKeySorterMatchesSorted(t *testing.T) {
	var ks sched.KeySorter
	var buf []*sched.Job
	for seed := uint64(0); seed < propertyIterations; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
		for _, j := range s.Jobs {
			switch r.IntN(3) {
			case 0:
				j.Submit = s.Now // ties broken by ID
			case 1:
				j.Submit = s.Now.Add(-time.Duration(r.IntN(5)) * time.Nanosecond)
			}
			j.Priority = int32(r.IntN(3))
		}
		key := func(j *sched.Job) int64 { return -int64(j.Priority) }
		want := sched.Sorted(s.Jobs, func(a, b *sched.Job) int {
			if c := cmp.Compare(key(a), key(b)); c != 0 {
				return c
			}
			return sched.CompareArrival(a, b)
		})
		if buf = ks.Sort(buf, s.Jobs, key); !slices.Equal(buf, want) {
			t.Fatalf("seed %d: KeySorter order differs from Sorted", seed)
		}
	}
}
