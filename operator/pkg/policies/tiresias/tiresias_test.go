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
