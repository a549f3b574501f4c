package pickyman

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestSchedule(t *testing.T) {
	const h = time.Hour
	node := func(n string) sched.Node { return utiltesting.MakeNode(n, 4).Obj() }
	tests := map[string]struct {
		opts  func(*Options)
		nodes []sched.Node
		jobs  []*sched.Job
		want  sched.Decisions
	}{
		"starts what fits, best fit": {
			nodes: []sched.Node{node("a"), node("b")},
			jobs: []*sched.Job{
				epochJob("r1", "a", 3, h, 10, 1, 0).Obj(),
				waitingJob("q1", 1, 1, h).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "q1", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 1}}}}},
		},
		"short job preempts a long one, now early in its epoch": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				epochJob("long", "a", 4, h, 20, 2, 5*time.Minute).Obj(),
				waitingJob("short", 1, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "long", Mode: sched.SuspendNow, For: "short", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "short", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}},
			},
		},
		"late in its epoch the victim runs on to the boundary": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				epochJob("long", "a", 4, h, 20, 2, 55*time.Minute).Obj(),
				waitingJob("short", 1, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "long", Mode: sched.SuspendBoundary, For: "short", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "short", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}},
			},
		},
		"the now ablation suspends now even late in the epoch": {
			opts:  func(o *Options) { o.Variant = Now },
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				epochJob("long", "a", 4, h, 20, 2, 55*time.Minute).Obj(),
				waitingJob("short", 1, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "long", Mode: sched.SuspendNow, For: "short", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "short", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}},
			},
		},
		"a job started in the cycle frees its GPUs at its predicted end: the next waiting job does not preempt for a wait that short": {
			nodes: []sched.Node{node("a"), node("b")},
			jobs: []*sched.Job{
				epochJob("long", "b", 4, h, 20, 2, 5*time.Minute).Obj(),
				waitingJob("first", 1, 4, 10*time.Minute).Obj(),
				waitingJob("next", 1, 4, h).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "first", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"a job started on its reservation frees its GPUs at its predicted end: the next waiting job does not preempt for a wait that short": {
			nodes: []sched.Node{node("a"), node("b")},
			jobs: []*sched.Job{
				epochJob("long", "b", 4, h, 20, 2, 5*time.Minute).Obj(),
				waitingJob("urgent", 1, 4, 10*time.Minute).Priority(100).Reserved("a").Obj(),
				waitingJob("victim", 1, 4, h).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "urgent", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"a job waiting on its reservation frees those GPUs at its predicted end: the next waiting job does not preempt for a wait that short": {
			nodes: []sched.Node{node("a"), node("b")},
			jobs: []*sched.Job{
				epochJob("long", "b", 4, h, 20, 2, 5*time.Minute).Obj(),
				epochJob("victim", "a", 4, h, 20, 2, 5*time.Minute).Suspending(sched.SuspendBoundary, "urgent", "a").Obj(),
				waitingJob("urgent", 1, 4, 10*time.Minute).Priority(100).Reserved("a").Obj(),
				waitingJob("next", 1, 4, h).Obj(),
			},
		},
		"a long job does not preempt a short one": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				epochJob("short", "a", 4, 10*time.Minute, 5, 2, time.Minute).Obj(),
				waitingJob("long", 1, 4, 20*h).Obj(),
			},
		},
		"victims by cost per freed GPU: the smaller checkpoint resumes faster": {
			nodes: []sched.Node{node("a"), node("b")},
			jobs: []*sched.Job{
				func() *sched.Job {
					j := epochJob("dear", "a", 4, h, 20, 2, 5*time.Minute).Obj()
					j.CheckpointBytes = 200e9
					return j
				}(),
				epochJob("cheap", "b", 4, h, 20, 2, 5*time.Minute).Obj(),
				waitingJob("q", 1, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "cheap", Mode: sched.SuspendNow, For: "q", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "b", Workers: 1, GPUs: 4}}}},
			},
		},
		"a victim that ends anyway as soon as it would free its GPUs is left alone": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				epochJob("ending", "a", 4, h, 10, 9, 50*time.Minute).Obj(),
				waitingJob("q", 1, 4, 10*time.Minute).Obj(),
			},
		},
		"protected: recently started, over budget, higher priority": {
			nodes: []sched.Node{node("a"), node("b"), node("c")},
			jobs: []*sched.Job{
				epochJob("recent", "a", 4, h, 20, 2, 5*time.Minute).Started(now.Add(-time.Minute)).Obj(),
				func() *sched.Job {
					j := epochJob("budget", "b", 4, h, 20, 2, 5*time.Minute).Obj()
					j.Preemptions = 4
					return j
				}(),
				epochJob("high", "c", 4, h, 20, 2, 5*time.Minute).Priority(1).Obj(),
				waitingJob("q", 1, 4, 10*time.Minute).Obj(),
			},
		},
		"without queue wait, a job behind another waiting one counts only its own wait": {
			nodes: []sched.Node{node("a")},
			jobs:  queueWaitJobs(),
		},
		"queue wait: the job behind another waiting one preempts the long job": {
			opts:  func(o *Options) { o.QueueWait = true },
			nodes: []sched.Node{node("a")},
			jobs:  queueWaitJobs(),
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "long", Mode: sched.SuspendNow, For: "w2", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "w2", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 2}}}},
			},
		},
		"flat priority: the shorter job goes first whatever its class": {
			opts:  func(o *Options) { o.FlatPriority = true },
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				waitingJob("low-short", 1, 4, time.Minute).Obj(),
				waitingJob("high-long", 1, 4, 10*h).Priority(1).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "low-short", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"higher priority is served first": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				waitingJob("low-short", 1, 4, time.Minute).Submit(now.Add(-50 * time.Minute)).Obj(),
				waitingJob("high-long", 1, 4, 10*h).Priority(1).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "high-long", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"class aging: a lower-class job that waited Promote competes on remaining time": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				waitingJob("low-short", 1, 4, time.Minute).Submit(now.Add(-70 * time.Minute)).Obj(),
				waitingJob("high-long", 1, 4, 10*h).Priority(1).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "low-short", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"class aging off: classes are strict": {
			opts:  func(o *Options) { o.Promote = 0 },
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				waitingJob("low-short", 1, 4, time.Minute).Submit(now.Add(-100 * h)).Obj(),
				waitingJob("high-long", 1, 4, 10*h).Priority(1).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "high-long", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"a promoted job does not preempt a higher class": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				epochJob("high", "a", 4, h, 20, 2, 5*time.Minute).Priority(1).Obj(),
				waitingJob("low-short", 1, 4, time.Minute).Submit(now.Add(-10 * h)).Obj(),
			},
		},
		"shorter predicted remaining time is served first": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				waitingJob("long", 1, 4, 10*h).Obj(),
				waitingJob("short", 1, 4, h).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "short", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"aging: a long job that waited long enough goes first": {
			nodes: []sched.Node{node("a")},
			jobs: []*sched.Job{
				waitingJob("old-long", 1, 4, 10*h).Submit(now.Add(-100 * h)).Obj(),
				waitingJob("new-short", 1, 4, h).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "old-long", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}}},
		},
		"gang across nodes: two victims, the unneeded third dropped": {
			nodes: []sched.Node{node("a"), node("b"), node("c")},
			jobs: []*sched.Job{
				epochJob("v1", "a", 4, h, 20, 2, 5*time.Minute).Obj(),
				epochJob("v2", "b", 4, h, 20, 2, 6*time.Minute).Obj(),
				epochJob("v3", "c", 2, h, 20, 2, 7*time.Minute).Obj(),
				waitingJob("q", 2, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions: []sched.Preemption{
					{JobID: "v1", Mode: sched.SuspendNow, For: "q", Reason: Reason},
					{JobID: "v2", Mode: sched.SuspendNow, For: "q", Reason: Reason},
				},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}, {Node: "b", Workers: 1, GPUs: 4}}}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(now).Nodes(tc.nodes...).Jobs(tc.jobs...).Obj()
			o := DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			got := New(o).Schedule(s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Schedule (-want +got):\n%s", diff)
			}
			if err := sched.Validate(s, got); err != nil {
				t.Errorf("invalid decisions: %v", err)
			}
		})
	}
}

// queueWaitJobs fills a 4-GPU node with a job ending in 9 minutes and a long one, and
// queues two 2-GPU jobs of 30 and 40 minutes. Alone, each would wait 9 minutes, less than
// suspending the long job costs; behind w1, w2 waits for the long job's end.
func queueWaitJobs() []*sched.Job {
	return []*sched.Job{
		epochJob("ending", "a", 2, 5*time.Minute, 10, 8, time.Minute).Obj(),
		epochJob("long", "a", 2, time.Hour, 20, 2, 5*time.Minute).Obj(),
		waitingJob("w1", 1, 2, 30*time.Minute).Obj(),
		waitingJob("w2", 1, 2, 40*time.Minute).Obj(),
	}
}

// TestUnchangedCycleSkipped checks that a cycle with no state-changing event since the
// last full one, within Refresh, decides nothing new when that one decided nothing, and that
// an arrival or Refresh passing makes the next cycle full again; without Refresh (the
// default) no wake-up is asked for, since nothing protected or aging can change the
// decision. Here long's preemption budget is spent in the first snapshot and not in the
// later ones, a change no event reports: only a full cycle sees it.
func TestUnchangedCycleSkipped(t *testing.T) {
	const h = time.Hour
	mk := func(at time.Time, spent bool) *sched.Snapshot {
		long := epochJob("long", "a", 4, h, 20, 2, 5*time.Minute).Obj()
		if spent {
			long.Preemptions = DefaultOptions().Budget
		}
		return utiltesting.MakeSnapshot(at).Nodes(utiltesting.MakeNode("a", 4).Obj()).Jobs(
			long, waitingJob("short", 1, 4, 10*time.Minute).Obj(),
		).Obj()
	}
	o := DefaultOptions()
	o.Refresh = 10 * time.Minute
	p := New(o)
	if d := p.Schedule(mk(now, true)); len(d.Preemptions) != 0 {
		t.Fatalf("first cycle: %+v, want nothing (long's budget is spent)", d)
	}
	if w := p.NextWake(); !w.Equal(now.Add(o.Refresh)) {
		t.Errorf("NextWake = %v, want Refresh after the cycle (%v)", w, now.Add(o.Refresh))
	}
	if d := p.Schedule(mk(now.Add(time.Minute), false)); len(d.Preemptions) != 0 {
		t.Errorf("unchanged cycle decided %+v, want nothing", d)
	}
	if d := p.Schedule(mk(now.Add(o.Refresh), false)); len(d.Preemptions) != 1 {
		t.Errorf("cycle after Refresh: %+v, want one preemption", d)
	}

	p = New(o)
	p.Schedule(mk(now, true))
	if d := p.Schedule(mk(now.Add(time.Minute), false)); len(d.Preemptions) != 0 {
		t.Errorf("unchanged cycle decided %+v, want nothing", d)
	}
	p.Observe(sched.Event{Kind: sched.EventSubmitted, Time: now.Add(time.Minute), Job: waitingJob("x", 1, 1, h).Obj()})
	if d := p.Schedule(mk(now.Add(2*time.Minute), false)); len(d.Preemptions) != 1 {
		t.Errorf("cycle after an arrival: %+v, want one preemption", d)
	}

	p = New(DefaultOptions())
	p.Schedule(mk(now, true))
	if w := p.NextWake(); !w.IsZero() {
		t.Errorf("default options: NextWake = %v, want none (no Refresh, nothing protected, one class)", w)
	}
}
