package pickyman

import (
	"fmt"
	"slices"
	"testing"
	"time"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// TestProtectionExpiryWakesTheCycle: a cycle with no event since the last one is skipped, but
// not once a running job's recency protection has expired since: that job may now be a
// victim, and waiting until Refresh would leave the waiting job queued for nothing.
func TestProtectionExpiryWakesTheCycle(t *testing.T) {
	o := DefaultOptions()
	o.Protect = 5 * time.Second
	p := New(o)
	long := epochJob("long", "a", 4, time.Hour, 20, 2, 5*time.Minute).Obj()
	long.LastStart = now.Add(-time.Second) // protected for 4 more seconds
	long.WarmUntil = long.LastStart
	short := waitingJob("short", 1, 4, 10*time.Minute).Obj()
	snap := func(at time.Time) *sched.Snapshot {
		return &sched.Snapshot{Now: at, Nodes: []sched.Node{{Name: "a", GPUs: 4, Used: 4}}, Jobs: []*sched.Job{long, short}}
	}
	if d := p.Schedule(snap(now)); len(d.Preemptions) != 0 {
		t.Fatalf("preempted a protected job: %+v", d.Preemptions)
	}
	if w, want := p.NextWake(), long.LastStart.Add(o.Protect); !w.Equal(want) {
		t.Errorf("NextWake = %v, want the end of long's protection (%v)", w, want)
	}
	if d := p.Schedule(snap(now.Add(2 * time.Second))); len(d.Preemptions) != 0 {
		t.Fatalf("preempted a protected job: %+v", d.Preemptions)
	}
	d := p.Schedule(snap(now.Add(5 * time.Second)))
	if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "long" {
		t.Fatalf("after the protection expired, want long preempted for short; got %+v", d)
	}
}

// TestPromotionWakesTheCycle: class aging raises a waiting job's class every Promote it has
// waited, which reorders the queue without an event; NextWake names the next such time and
// the cycle then is full, not skipped.
func TestPromotionWakesTheCycle(t *testing.T) {
	p := New(DefaultOptions()) // Promote 1 h, no Refresh
	long := epochJob("long", "a", 4, time.Hour, 20, 2, 5*time.Minute).Obj()
	long.LastStart = now.Add(-time.Minute) // protected: no victim, so nothing starts
	long.WarmUntil = long.LastStart
	high := waitingJob("high", 1, 4, 10*time.Minute).Priority(1).Obj()
	low := waitingJob("low", 1, 4, 10*time.Minute).Obj()
	low.Submit = now.Add(-20 * time.Minute)
	snap := func(at time.Time) *sched.Snapshot {
		return &sched.Snapshot{Now: at, Nodes: []sched.Node{{Name: "a", GPUs: 4, Used: 4}}, Jobs: []*sched.Job{long, high, low}}
	}
	p.Schedule(snap(now))
	protectEnd := long.LastStart.Add(DefaultOptions().Protect)
	if w := p.NextWake(); !w.Equal(protectEnd) {
		t.Fatalf("NextWake = %v, want the end of long's protection %v (before low's promotion)", w, protectEnd)
	}
	long.Preemptions = DefaultOptions().Budget // protected for good: only the promotion is left
	p.Observe(sched.Event{Kind: sched.EventStarted, Time: now, Job: long})
	p.Schedule(snap(now))
	if w, want := p.NextWake(), now.Add(40*time.Minute); !w.Equal(want) {
		t.Errorf("NextWake = %v, want low's promotion after 1 h of waiting (%v)", w, want)
	}
	if !p.due(now.Add(40*time.Minute)) || p.due(now.Add(39*time.Minute)) {
		t.Errorf("due: a cycle must be full from low's promotion on, and not before")
	}
}

// TestUndoneDecisionIsDecidedAgain: the operator may fail to carry a decision out (a write
// conflict, a rejected validation), and then the next snapshot is the one the decision was
// made on. That cycle must decide again, not skip the snapshot as unchanged.
func TestUndoneDecisionIsDecidedAgain(t *testing.T) {
	p := New(DefaultOptions())
	q := waitingJob("q", 1, 4, 10*time.Minute).Obj()
	snap := func(at time.Time) *sched.Snapshot {
		return &sched.Snapshot{Now: at, Nodes: []sched.Node{{Name: "a", GPUs: 4}}, Jobs: []*sched.Job{q}}
	}
	for i, at := range []time.Time{now, now.Add(time.Second), now.Add(time.Minute)} {
		if d := p.Schedule(snap(at)); len(d.Starts) != 1 || d.Starts[0].JobID != "q" {
			t.Fatalf("cycle %d on the same snapshot: want q started, got %+v", i, d)
		}
	}
}

// TestGrowthBesideAnotherModelsQueue: a waiting job left without GPUs of its model stops
// elastic jobs from growing into GPUs it could use, not into those of another model.
func TestGrowthBesideAnotherModelsQueue(t *testing.T) {
	grower := elasticJob("e", 4, 8, 30*time.Minute, "a", "a", "a", "a")
	grower.GPUModel = "A100"
	grower.Preemptions = DefaultOptions().Budget // no victim either, but it may grow
	busy := epochJob("busy", "b", 4, time.Hour, 20, 2, 5*time.Minute).GPUModel("V100").Obj()
	busy.LastStart = now.Add(-time.Minute) // protected: no victim for the waiting job
	busy.WarmUntil = busy.LastStart
	tests := map[string]struct {
		waiting string // the waiting job's GPU model
		grows   bool
	}{
		"a waiting V100 job does not stop an A100 job from growing": {waiting: "V100", grows: true},
		"a waiting A100 job does":                                   {waiting: "A100"},
		"a waiting job of any model does":                           {waiting: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			per := int32(8) // fits on a, but not beside e
			if tc.waiting == "V100" {
				per = 4 // fits on b, but not beside busy
			}
			q := waitingJob("q", 1, per, 10*time.Minute).GPUModel(tc.waiting).Obj()
			s := utiltesting.MakeSnapshot(now).Nodes(
				utiltesting.MakeNode("a", 8).Model("A100").Obj(),
				utiltesting.MakeNode("b", 4).Model("V100").Obj(),
			).Jobs(grower, busy, q).Obj()
			d := New(DefaultOptions()).Schedule(s)
			if err := sched.Validate(s, d); err != nil {
				t.Fatalf("invalid decisions: %v", err)
			}
			grew := false
			for _, pr := range d.Preemptions {
				if pr.JobID == "e" && pr.Reason == ReasonGrow {
					grew = true
				}
			}
			if grew != tc.grows || len(d.Starts) != 0 {
				t.Errorf("grew = %v, want %v; decisions %+v", grew, tc.grows, d)
			}
		})
	}
}

// TestFitChangeMakesTheNextCycleFull: whether an elastic job gains by growing depends on its
// model's fit, which changes when an epoch ends (a published sample), not only at the events
// that change the snapshot. A cycle after such a change is full: the job grows once the fit
// says growing pays, although no job arrived, started or ended meanwhile.
func TestFitChangeMakesTheNextCycleFull(t *testing.T) {
	p := New(DefaultOptions())
	epoch := func(id string, gpus int32, d time.Duration) {
		j := utiltesting.MakeJob(id).GPUs(gpus, 1).Model("resnet50").Obj()
		p.Observe(sched.Event{Kind: sched.EventStarted, Time: now, Job: j})
		p.Observe(sched.Event{Kind: sched.EventEpoch, Time: now, Job: j, Duration: d})
	}
	// Four jobs of the model: as fast on 8 GPUs as on 4, so growing gains nothing.
	for i, g := range []int32{4, 4, 8, 8} {
		epoch(fmt.Sprintf("p%d", i), g, time.Minute)
	}
	if f := p.pred.Fit("resnet50"); !f.Trusted || f.DistinctGPUs < 2 {
		t.Fatalf("fit %+v, want trusted over two allocations", f)
	}
	grower := elasticJob("e", 2, 8, 0, "a", "a", "a", "a") // 4 of its 8 workers, 4 GPUs idle
	snap := func(at time.Time) *sched.Snapshot {
		return utiltesting.MakeSnapshot(at).Nodes(utiltesting.MakeNode("a", 8).Obj()).Jobs(grower).Obj()
	}
	grows := func(d sched.Decisions) bool {
		return slices.ContainsFunc(d.Preemptions, func(pr sched.Preemption) bool { return pr.JobID == "e" && pr.Reason == ReasonGrow })
	}
	if grows(p.Schedule(snap(now))) {
		t.Fatal("grew although its model runs as fast on 8 GPUs as on 4")
	}
	// The 4-GPU jobs' next epochs take 3 min: their mean is now 2 min, twice the 8-GPU time.
	for _, id := range []string{"p0", "p1"} {
		j := utiltesting.MakeJob(id).GPUs(4, 1).Model("resnet50").Obj()
		p.Observe(sched.Event{Kind: sched.EventEpoch, Time: now, Job: j, Duration: 3 * time.Minute})
	}
	if f := p.pred.Fit("resnet50"); f.At(8) >= f.At(4) {
		t.Fatalf("fit %+v still says 8 GPUs are no faster", f)
	}
	if !grows(p.Schedule(snap(now.Add(time.Second)))) {
		t.Fatal("the same snapshot after the fit changed: the cycle was skipped, the job did not grow")
	}
}
