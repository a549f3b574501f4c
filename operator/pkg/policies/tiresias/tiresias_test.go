package tiresias_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies/tiresias"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestSchedule(t *testing.T) {
	a8 := utiltesting.MakeNode("a", 8).Obj()
	now := utiltesting.At(10 * time.Hour)
	at := func(m int) time.Time { return utiltesting.At(time.Duration(m) * time.Minute) }
	slot := func(n string, w, g int32) []sched.Slot { return []sched.Slot{{Node: n, Workers: w, GPUs: g}} }
	preempt := func(id, forID string) sched.Preemption {
		return sched.Preemption{JobID: id, Mode: sched.SuspendNow, For: forID, Reason: tiresias.Reason}
	}
	cases := map[string]struct {
		opts tiresias.Options
		jobs []*sched.Job
		want sched.Decisions
	}{
		"a new job preempts a job of a lower queue": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Attained(2 * time.Hour).Running("a").Obj(), // 7200 GPU-s: queue 1
				utiltesting.MakeJob("q").GPUs(1, 8).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: slot("a", 1, 8)}},
			},
		},
		"no preemption within a queue": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Attained(10 * time.Minute).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 8).Obj(),
			},
		},
		"within a queue, arrival order": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("late").GPUs(1, 8).Submit(at(2)).Obj(),
				utiltesting.MakeJob("early").GPUs(1, 8).Submit(at(1)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "early", Placement: slot("a", 1, 8)}}},
		},
		"higher queue first, whatever the arrival": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("old-served").GPUs(1, 8).Submit(at(1)).Attained(5 * time.Hour).Obj(),
				utiltesting.MakeJob("new").GPUs(1, 8).Submit(at(2)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "new", Placement: slot("a", 1, 8)}}},
		},
		"custom thresholds": {
			opts: tiresias.Options{Thresholds: []time.Duration{time.Minute}},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Attained(10 * time.Minute).Running("a").Obj(),
				utiltesting.MakeJob("q").GPUs(1, 8).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r", "q")},
				Reservations: []sched.Reservation{{JobID: "q", Placement: slot("a", 1, 8)}},
			},
		},
		"without the guard a starving job stays low": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Submit(at(60)).Attained(2 * time.Hour).Running("a").Obj(),
				// Ran 1h on 8 GPUs, stopped 5h ago.
				utiltesting.MakeJob("starved").GPUs(1, 8).Submit(at(0)).Attained(8 * time.Hour).
					Started(now.Add(-6 * time.Hour)).LastStop(now.Add(-5 * time.Hour)).Obj(),
			},
		},
		"the starvation guard promotes to the top queue": {
			opts: tiresias.Options{StarveLimit: 4},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Submit(at(60)).Attained(2 * time.Hour).Running("a").Obj(),
				utiltesting.MakeJob("starved").GPUs(1, 8).Submit(at(0)).Attained(8 * time.Hour).
					Started(now.Add(-6 * time.Hour)).LastStop(now.Add(-5 * time.Hour)).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{preempt("r", "starved")},
				Reservations: []sched.Reservation{{JobID: "starved", Placement: slot("a", 1, 8)}},
			},
		},
		"not starving yet": {
			opts: tiresias.Options{StarveLimit: 6},
			jobs: []*sched.Job{
				utiltesting.MakeJob("r").GPUs(1, 8).Submit(at(60)).Attained(2 * time.Hour).Running("a").Obj(),
				utiltesting.MakeJob("starved").GPUs(1, 8).Submit(at(0)).Attained(8 * time.Hour).
					Started(now.Add(-6 * time.Hour)).LastStop(now.Add(-5 * time.Hour)).Obj(),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(now).Nodes(a8).Jobs(tc.jobs...).Obj()
			p, err := tiresias.New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Schedule(s)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Schedule (-want +got):\n%s", diff)
			}
			if err := sched.Validate(s, got); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestPromotionSticks(t *testing.T) {
	// Once promoted, a job keeps counting service from its promotion: after it runs again
	// for less than the first threshold, it is still in queue 0.
	p, err := tiresias.New(tiresias.Options{StarveLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := utiltesting.At(10 * time.Hour)
	j := utiltesting.MakeJob("j").GPUs(1, 8).Attained(8 * time.Hour).Started(now.Add(-3 * time.Hour)).LastStop(now.Add(-2 * time.Hour)).Obj()
	p.Schedule(utiltesting.MakeSnapshot(now).Nodes(utiltesting.MakeNode("b", 8).Used(8).Obj()).KeepUsed().Jobs(j).Obj())
	if q := p.Queue(j); q != 0 {
		t.Fatalf("after promotion, queue = %d, want 0", q)
	}
	j.Phase, j.Attained = sched.Running, j.Attained+30*time.Minute
	if q := p.Queue(j); q != 0 {
		t.Errorf("after 30 GPU-minutes more, queue = %d, want 0", q)
	}
	j.Attained += 2 * time.Hour
	if q := p.Queue(j); q != 1 {
		t.Errorf("after 2.5 GPU-hours more, queue = %d, want 1", q)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, o := range map[string]tiresias.Options{
		"decreasing": {Thresholds: []time.Duration{time.Hour, time.Minute}},
		"zero":       {Thresholds: []time.Duration{0}},
		"negative":   {StarveLimit: -1},
	} {
		if _, err := tiresias.New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}

// TestNextWake: while a job waits, Tiresias asks for a cycle when a running job's attained
// service crosses its queue's threshold, and that cycle preempts it; without a waiting job
// it asks for none.
func TestNextWake(t *testing.T) {
	now := utiltesting.At(10 * time.Hour)
	p, err := tiresias.New(tiresias.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// r holds 4 GPUs and has 3000 of the 3600 GPU-seconds of queue 0: it crosses in 150 s.
	snap := func(at time.Time, waiting bool) *sched.Snapshot {
		r := utiltesting.MakeJob("r").GPUs(1, 4).Attained(3000*time.Second + 4*at.Sub(now)).Running("a").Obj()
		jobs := []*sched.Job{r}
		if waiting {
			jobs = append(jobs, utiltesting.MakeJob("q").GPUs(1, 4).Submit(now).Obj())
		}
		return utiltesting.MakeSnapshot(at).Nodes(utiltesting.MakeNode("a", 4).Obj()).Jobs(jobs...).Obj()
	}
	if d := p.Schedule(snap(now, false)); len(d.Preemptions)+len(d.Starts) != 0 {
		t.Fatalf("nothing waits: decided %+v", d)
	}
	if w := p.NextWake(); !w.IsZero() {
		t.Errorf("nothing waits: NextWake = %v, want none", w)
	}
	if d := p.Schedule(snap(now, true)); len(d.Preemptions) != 0 {
		t.Fatalf("same queue: preempted %+v", d.Preemptions)
	}
	want := now.Add(150 * time.Second)
	if w := p.NextWake(); !w.Equal(want) {
		t.Fatalf("NextWake = %v, want %v (r crosses 3600 GPU-s)", w, want)
	}
	if d := p.Schedule(snap(want.Add(-time.Second), true)); len(d.Preemptions) != 0 {
		t.Errorf("a second before the crossing: preempted %+v", d.Preemptions)
	}
	if d := p.Schedule(snap(want, true)); len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "r" {
		t.Errorf("at the crossing: %+v, want r preempted for q", d)
	}
}

// TestNextWakeStarvation: with StarveLimit, a waiting job of a lower queue is promoted when
// it has waited StarveLimit times its last run, and NextWake names that time.
func TestNextWakeStarvation(t *testing.T) {
	now := utiltesting.At(10 * time.Hour)
	p, err := tiresias.New(tiresias.Options{StarveLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// s ran 1 h on 4 GPUs (queue 1), stopped 30 min ago: promoted 2 h after it stopped.
	stop := now.Add(-30 * time.Minute)
	s := utiltesting.MakeJob("s").GPUs(1, 4).Started(stop.Add(-time.Hour)).LastStop(stop).Attained(4 * time.Hour).Obj()
	s.Phase = sched.Queued
	r := utiltesting.MakeJob("r").GPUs(1, 4).Attained(5 * time.Hour).Running("a").Obj()
	p.Schedule(utiltesting.MakeSnapshot(now).Nodes(utiltesting.MakeNode("a", 4).Obj()).Jobs(r, s).Obj())
	if w, want := p.NextWake(), stop.Add(2*time.Hour+1); !w.Equal(want) {
		t.Errorf("NextWake = %v, want %v", w, want)
	}
}
