package pickyman

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// randomCase makes a random snapshot with the fields the policy reads.
func randomCase(seed uint64) *sched.Snapshot {
	r := rand.New(rand.NewPCG(seed, 1))
	cfg := utiltesting.SmallRandom(r)
	cfg.Running = 5 + r.IntN(40)
	s := utiltesting.RandomSnapshot(seed, cfg)
	enrich(s, seed)
	return s
}

// TestProperties checks, over random snapshots, for every variant: the decisions are
// valid; every victim group with the free GPUs gives its waiting job a feasible gang
// placement (the reservation); no victim is protected; the same snapshot gives the same
// decisions.
func TestProperties(t *testing.T) {
	type config struct {
		v         Variant
		queueWait bool
	}
	for _, cf := range []config{{Full, false}, {Blind, false}, {Oracle, false}, {Now, false}, {Full, true}} {
		v := cf.v
		for seed := uint64(0); seed < 300; seed++ {
			s := randomCase(seed)
			o := DefaultOptions()
			o.Variant, o.QueueWait = v, cf.queueWait
			d := New(o).Schedule(s)
			name := fmt.Sprintf("variant %q queuewait %v seed %d", v, cf.queueWait, seed)
			if err := sched.Validate(s, d); err != nil {
				t.Fatalf("%s: invalid decisions: %v", name, err)
			}
			checkVictims(t, name, s, d, o)
			if again := New(o).Schedule(randomCase(seed)); !cmp.Equal(d, again) {
				t.Fatalf("%s: decisions differ between two runs:\n%s", name, cmp.Diff(d, again))
			}
		}
	}
}

func checkVictims(t *testing.T, name string, s *sched.Snapshot, d sched.Decisions, o Options) {
	t.Helper()
	ix := sched.NewIndex(s)
	reserved := map[string][]sched.Slot{}
	for _, r := range d.Reservations {
		reserved[r.JobID] = r.Placement
	}
	groups := map[string][]*sched.Job{}
	for _, p := range d.Preemptions {
		v, q := ix.Job(p.JobID), ix.Job(p.For)
		if v == nil || q == nil {
			t.Fatalf("%s: preemption %+v names unknown jobs", name, p)
		}
		switch {
		case v.Phase != sched.Running:
			t.Errorf("%s: victim %s is %s, not running", name, v.ID, v.Phase)
		case s.Now.Sub(v.LastStart) < o.Protect:
			t.Errorf("%s: victim %s started %v ago, inside the protection window", name, v.ID, s.Now.Sub(v.LastStart))
		case v.Preemptions >= o.Budget:
			t.Errorf("%s: victim %s was preempted %d times, budget %d", name, v.ID, v.Preemptions, o.Budget)
		case v.Priority > q.Priority:
			t.Errorf("%s: victim %s has priority %d over %s's %d", name, v.ID, v.Priority, q.ID, q.Priority)
		}
		if (o.Variant == Now || o.Variant == Blind) && p.Mode != sched.SuspendNow {
			t.Errorf("%s: variant %q suspends %s in mode %s", name, o.Variant, v.ID, p.Mode)
		}
		groups[q.ID] = append(groups[q.ID], v)
	}
	for qid, victims := range groups {
		q := ix.Job(qid)
		pl, ok := reserved[qid]
		if !ok {
			t.Fatalf("%s: victims for %s but no reservation", name, qid)
		}
		if err := sched.CheckShape(q, pl); err != nil {
			t.Errorf("%s: reservation of %s: %v", name, qid, err)
		}
		// The reservation lies on GPUs that are free or held by q's victims.
		view := sched.NewView(s, ix)
		for _, v := range victims {
			view.Give(v.Placement)
		}
		if !view.Fits(q, pl) {
			t.Errorf("%s: victims of %s do not free its reservation %v", name, qid, pl)
		}
	}
}

// TestMinimalGroups checks the reverse pass: with a single waiting job that does not fit,
// every victim of its group is needed (without any one of them, the free GPUs and the
// other victims' GPUs hold no placement).
func TestMinimalGroups(t *testing.T) {
	checked := 0
	for seed := uint64(0); seed < 400; seed++ {
		s := randomCase(seed)
		// Keep the running jobs and the first queued job that never ran and has no
		// reservation; drop suspending jobs so the view is simple.
		var jobs []*sched.Job
		var q *sched.Job
		for _, j := range s.Jobs {
			switch {
			case j.Phase == sched.Running:
				jobs = append(jobs, j)
			case j.Phase == sched.Queued && q == nil && len(j.Reserved) == 0:
				q = j
			}
		}
		if q == nil {
			continue
		}
		q.UserEstimate = 1 // as short as it gets, so a group pays whenever one exists
		jobs = append(jobs, q)
		s2 := utiltesting.MakeSnapshot(s.Now).Nodes(s.Nodes...).Jobs(jobs...).Obj()
		o := DefaultOptions()
		o.Protect = 0
		o.Budget = 1 << 30
		d := New(o).Schedule(s2)
		if len(d.Preemptions) == 0 {
			continue
		}
		checked++
		ix := sched.NewIndex(s2)
		var victims []*sched.Job
		for _, p := range d.Preemptions {
			victims = append(victims, ix.Job(p.JobID))
		}
		for skip := range victims {
			view := sched.NewView(s2, ix)
			for i, v := range victims {
				if i != skip {
					view.Give(v.Placement)
				}
			}
			if _, ok := view.PlaceGang(q); ok {
				t.Errorf("seed %d: victim %s of %s is not needed", seed, victims[skip].ID, q.ID)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d random cases preempted; the property was hardly exercised", checked)
	}
}
