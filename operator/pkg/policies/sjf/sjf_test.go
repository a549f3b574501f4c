package sjf_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies/sjf"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestSchedule(t *testing.T) {
	a8 := utiltesting.MakeNode("a", 8).Obj()
	slot := func(n string, w, g int32) []sched.Slot { return []sched.Slot{{Node: n, Workers: w, GPUs: g}} }
	cases := map[string]struct {
		jobs []*sched.Job
		want sched.Decisions
	}{
		"shortest service first": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("3h").GPUs(1, 4).Oracle(3*time.Hour, 3*time.Hour).Obj(),
				utiltesting.MakeJob("1h").GPUs(1, 4).Oracle(time.Hour, time.Hour).Obj(),
				utiltesting.MakeJob("2h").GPUs(1, 4).Oracle(2*time.Hour, 2*time.Hour).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{
				{JobID: "1h", Placement: slot("a", 1, 4)},
				{JobID: "2h", Placement: slot("a", 1, 4)},
			}},
		},
		"a short job that does not fit does not block": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 4).Running("a").Obj(),
				utiltesting.MakeJob("short-big").GPUs(1, 8).Oracle(time.Minute, time.Minute).Obj(),
				utiltesting.MakeJob("long-small").GPUs(1, 2).Oracle(time.Hour, time.Hour).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "long-small", Placement: slot("a", 1, 2)}}},
		},
		"no preemption": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("x").GPUs(1, 8).Oracle(9*time.Hour, 9*time.Hour).Running("a").Obj(),
				utiltesting.MakeJob("short").GPUs(1, 8).Oracle(time.Minute, time.Minute).Obj(),
			},
		},
		// On a cluster there is no oracle: the user's estimates order the queue.
		"declared estimates without an oracle": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("a-3h").GPUs(1, 4).Estimate(3 * time.Hour).Submit(utiltesting.At(0)).Obj(),
				utiltesting.MakeJob("b-none").GPUs(1, 4).Submit(utiltesting.At(time.Minute)).Obj(),
				utiltesting.MakeJob("c-1h").GPUs(1, 4).Estimate(time.Hour).Submit(utiltesting.At(2 * time.Minute)).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{
				{JobID: "c-1h", Placement: slot("a", 1, 4)},
				{JobID: "a-3h", Placement: slot("a", 1, 4)},
			}},
		},
		"unknown service sorts last": {
			jobs: []*sched.Job{
				utiltesting.MakeJob("unknown").GPUs(1, 8).Obj(),
				utiltesting.MakeJob("known").GPUs(1, 8).Oracle(9*time.Hour, 9*time.Hour).Obj(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "known", Placement: slot("a", 1, 8)}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := utiltesting.MakeSnapshot(utiltesting.At(time.Hour)).Nodes(a8).Jobs(tc.jobs...).Obj()
			got := sjf.New().Schedule(s)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Schedule (-want +got):\n%s", diff)
			}
			if err := sched.Validate(s, got); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
