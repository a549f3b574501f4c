package pickyman

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// TestBacklogOptions: the options off by default that look past the waiting job alone
// (Exchange, WaitFloor, HoldAfter), each against the same snapshot without it.
func TestBacklogOptions(t *testing.T) {
	const h, m = time.Hour, time.Minute
	node := func(n string) sched.Node { return utiltesting.MakeNode(n, 4).Obj() }
	// soon ends in 15 minutes, less than q's 20: alone, q waits for it. long runs 18 h more.
	running := func() []*sched.Job {
		return []*sched.Job{
			epochJob("soon", "a", 4, 5*m, 10, 7, 0).Obj(),
			epochJob("long", "b", 4, h, 20, 2, 5*m).Obj(),
		}
	}
	preemptLong := sched.Decisions{
		Preemptions:  []sched.Preemption{{JobID: "long", Mode: sched.SuspendNow, For: "q", Reason: Reason}},
		Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "b", Workers: 1, GPUs: 4}}}},
	}
	tests := map[string]struct {
		opts func(*Options)
		jobs []*sched.Job
		want sched.Decisions
	}{
		"alone, q waits the 15 minutes rather than suspend long for 20": {
			jobs: append(running(), waitingJob("q", 1, 4, 20*m).Obj(), waitingJob("r", 1, 4, 20*m).Obj()),
		},
		"exchange: with r behind it, q takes long's GPUs (18 h left against q's 20 min)": {
			opts: func(o *Options) { o.Exchange = 2 },
			jobs: append(running(), waitingJob("q", 1, 4, 20*m).Obj(), waitingJob("r", 1, 4, 20*m).Obj()),
			want: preemptLong,
		},
		"exchange: with nobody behind q, the GPUs soon frees would idle: no exchange": {
			opts: func(o *Options) { o.Exchange = 2 },
			jobs: append(running(), waitingJob("q", 1, 4, 20*m).Obj()),
		},
		"exchange: never a victim that ends before q would": {
			opts: func(o *Options) { o.Exchange = 2 },
			jobs: []*sched.Job{
				epochJob("soon", "a", 4, 5*m, 10, 7, 0).Obj(),
				epochJob("mid", "b", 4, 5*m, 10, 4, m).Obj(), // 29 min left: less than 2 x 20 + its overhead
				waitingJob("q", 1, 4, 20*m).Obj(), waitingJob("r", 1, 4, 20*m).Obj(),
			},
		},
		"wait floor: q has waited 2 h, so its wait is taken to be at least that": {
			opts: func(o *Options) { o.WaitFloor = 1 },
			jobs: append(running(), waitingJob("q", 1, 4, 20*m).Obj()),
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "soon", Mode: sched.SuspendBoundary, For: "q", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}},
			},
		},
		"budget: long was preempted 4 times, the budget: protected": {
			jobs: append(budgetJobs(), waitingJob("q", 1, 4, 20*m).Obj()),
		},
		"budget every hour: long has run 2 h, so its budget is 6": {
			opts: func(o *Options) { o.BudgetEvery = h },
			jobs: append(budgetJobs(), waitingJob("q", 1, 4, 20*m).Obj()),
			want: preemptLong,
		},
		"budget every 3 hours: long has run 2 h, its budget is still 4": {
			opts: func(o *Options) { o.BudgetEvery = 3 * h },
			jobs: append(budgetJobs(), waitingJob("q", 1, 4, 20*m).Obj()),
		},
		"without hold, the small job takes the free GPUs the large one needs": {
			jobs: holdJobs(),
			want: sched.Decisions{Starts: []sched.Start{{JobID: "small", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 1}}}}},
		},
		"hold: the large job that waited 2 h keeps node a's free GPUs": {
			opts: func(o *Options) { o.HoldAfter = h },
			jobs: holdJobs(),
		},
		"hold: not before it has waited HoldAfter": {
			opts: func(o *Options) { o.HoldAfter = 3 * h },
			jobs: holdJobs(),
			want: sched.Decisions{Starts: []sched.Start{{JobID: "small", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 1}}}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(now).Nodes(node("a"), node("b")).Jobs(tc.jobs...).Obj()
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

// budgetJobs: node a is full with a job of 18 h more that restarted a minute ago
// (protected), node b with another, preempted 4 times already, that has run 2 h 5 min.
func budgetJobs() []*sched.Job {
	long := epochJob("long", "b", 4, time.Hour, 20, 2, 5*time.Minute).Obj()
	long.Preemptions = 4
	return []*sched.Job{epochJob("fresh", "a", 4, time.Hour, 20, 2, 5*time.Minute).Started(now.Add(-time.Minute)).Obj(), long}
}

// holdJobs: node a has 2 GPUs free beside a job started a minute ago (protected), node b
// is full with another; a 4-GPU job that has waited 2 h (first in the queue: 10 minutes
// to run) and a 1-GPU job just submitted (30 minutes) wait.
func holdJobs() []*sched.Job {
	return []*sched.Job{
		epochJob("new-a", "a", 2, time.Hour, 20, 2, 0).Started(now.Add(-time.Minute)).Obj(),
		epochJob("new-b", "b", 4, time.Hour, 20, 2, 0).Started(now.Add(-time.Minute)).Obj(),
		waitingJob("large", 1, 4, 10*time.Minute).Obj(),
		waitingJob("small", 1, 1, 30*time.Minute).Submit(now).Obj(),
	}
}
