package pickyman

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// elasticJob makes a running elastic job of workers 1-GPU workers (elastic lo..hi) on the
// named nodes (one name per worker), 2 of 20 one-hour epochs done, into the third.
func elasticJob(id string, lo, hi int32, into time.Duration, nodes ...string) *sched.Job {
	w := utiltesting.MakeJob(id).GPUs(int32(len(nodes)), 1).Elastic(lo, hi).Model("resnet50").Started(now.Add(-24 * time.Hour)).Running(nodes...)
	w.Epochs, w.EpochsDone, w.EpochTime, w.SinceCheckpoint = 20, 2, time.Hour, into
	w.WarmUntil = w.LastStart.Add(time.Minute)
	w.CheckpointBytes = 1e9
	w.Job.Attained = time.Duration(len(nodes)) * (2*time.Hour + into)
	return w.Obj()
}

func slots(node string, workers int32) []sched.Slot {
	return []sched.Slot{{Node: node, Workers: workers, GPUs: workers}}
}

func TestScheduleElastic(t *testing.T) {
	const h = time.Hour
	eight := []string{"a", "a", "a", "a", "a", "a", "a", "a"}
	node := utiltesting.MakeNode("a", 8).Obj()
	tests := map[string]struct {
		opts func(*Options)
		jobs []*sched.Job
		want sched.Decisions
	}{
		"an elastic job shrinks to its minimum for a waiting job": {
			jobs: []*sched.Job{
				elasticJob("e", 4, 8, 55*time.Minute, eight...),
				waitingJob("q", 1, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, For: "q", Reason: ReasonShrink, Resize: slots("a", 4)}},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}},
			},
		},
		"it gives only the workers the waiting job needs": {
			jobs: []*sched.Job{
				elasticJob("e", 2, 8, 55*time.Minute, eight...),
				waitingJob("q", 1, 2, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, For: "q", Reason: ReasonShrink, Resize: slots("a", 6)}},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 2}}}},
			},
		},
		"with elasticity off the elastic job is preempted whole": {
			opts: func(o *Options) { o.Rigid = true },
			jobs: []*sched.Job{
				elasticJob("e", 4, 8, 55*time.Minute, eight...),
				waitingJob("q", 1, 4, 10*time.Minute).Obj(),
			},
			want: sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, For: "q", Reason: Reason}},
				Reservations: []sched.Reservation{{JobID: "q", Placement: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}}}},
			},
		},
		"a waiting elastic job starts smaller rather than wait for a long job": {
			jobs: []*sched.Job{
				epochJob("long", "a", 4, h, 20, 2, 5*time.Minute).Obj(),
				func() *sched.Job {
					j := waitingJob("q", 8, 1, h).Obj()
					j.MinWorkers, j.MaxWorkers = 4, 8
					return j
				}(),
			},
			want: sched.Decisions{Starts: []sched.Start{{JobID: "q", Placement: slots("a", 4)}}},
		},
		"a shrunk job grows back into idle GPUs when nobody waits": {
			jobs: []*sched.Job{elasticJob("e", 4, 8, 30*time.Minute, "a", "a", "a", "a")},
			want: sched.Decisions{
				Preemptions: []sched.Preemption{{JobID: "e", Mode: sched.SuspendBoundary, Reason: ReasonGrow, Resize: slots("a", 8)}},
			},
		},
		"no growth within the protection after a restart": {
			jobs: []*sched.Job{func() *sched.Job {
				j := elasticJob("e", 4, 8, 0, "a", "a", "a", "a")
				j.LastStart = now.Add(-time.Minute)
				return j
			}()},
		},
		"no growth with elasticity off": {
			opts: func(o *Options) { o.Rigid = true },
			jobs: []*sched.Job{elasticJob("e", 4, 8, 30*time.Minute, "a", "a", "a", "a")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			s := utiltesting.MakeSnapshot(now).Nodes(node).Jobs(tc.jobs...).Obj()
			d := New(o).Schedule(s)
			if err := sched.Validate(s, d); err != nil {
				t.Fatalf("invalid decisions: %v", err)
			}
			if diff := cmp.Diff(tc.want, d, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// Over random snapshots in which a third of the multi-worker jobs are elastic, every
// decision is valid (resizes included), a job is resized or preempted at most once, and
// resizes keep each job within its bounds.
func TestPropertiesElastic(t *testing.T) {
	resized := 0
	for seed := uint64(0); seed < 300; seed++ {
		s := randomCase(seed)
		r := rand.New(rand.NewPCG(seed, 9))
		for _, j := range s.Jobs {
			if j.GPUs() < 2 || r.IntN(3) > 0 || j.Phase == sched.Suspending || len(j.Reserved) > 0 {
				continue
			}
			// One worker per GPU, elastic from half to twice that.
			for i := range j.Placement {
				j.Placement[i].Workers = j.Placement[i].GPUs
			}
			j.Workers, j.GPUsPerWorker = j.GPUs(), 1
			j.MinWorkers, j.MaxWorkers = (j.Workers+1)/2, 2*j.Workers
		}
		for _, rigid := range []bool{false, true} {
			o := DefaultOptions()
			o.Rigid = rigid
			d := New(o).Schedule(s)
			name := fmt.Sprintf("seed %d rigid %v", seed, rigid)
			if err := sched.Validate(s, d); err != nil {
				t.Fatalf("%s: invalid decisions: %v", name, err)
			}
			for _, p := range d.Preemptions {
				if p.Resize == nil {
					continue
				}
				if rigid {
					t.Fatalf("%s: resize of %s with elasticity off", name, p.JobID)
				}
				resized++
			}
		}
	}
	if resized == 0 {
		t.Fatal("no random snapshot led to a resize: the property is vacuous")
	}
	t.Logf("%d resizes checked", resized)
}
