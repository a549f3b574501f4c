package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
	"github.com/pickyman/pickyman/traces"
)

// recorder wraps a policy, records every observed event and keeps copies of the jobs as
// the policy saw them at given times.
type recorder struct {
	sched.Policy
	events []obs
	at     map[time.Duration]bool
	seen   map[string]sched.Job // "job@seconds"
}

type obs struct {
	Kind     sched.EventKind
	Job      string
	T, D     float64
	Bytes    int64
	Phase    sched.Phase
	EpochsOK int32
}

func (r *recorder) Observe(ev sched.Event) {
	r.events = append(r.events, obs{Kind: ev.Kind, Job: ev.Job.ID, T: ev.Time.Sub(Epoch).Seconds(), D: ev.Duration.Seconds(),
		Bytes: ev.Bytes, Phase: ev.Job.Phase, EpochsOK: ev.Job.EpochsDone})
}

func (r *recorder) Schedule(snap *sched.Snapshot) sched.Decisions {
	t := snap.Now.Sub(Epoch)
	if r.at[t] {
		for _, j := range snap.Jobs {
			// The first cycle at t; a cycle that follows decisions at the same instant sees
			// their effect.
			if _, ok := r.seen[j.ID+"@"+t.String()]; !ok {
				r.seen[j.ID+"@"+t.String()] = *j
			}
		}
	}
	return r.Policy.Schedule(snap)
}

var _ sched.Observer = (*recorder)(nil)

func TestObserverEvents(t *testing.T) {
	jobs := twoJobs()
	jobs[0].DatasetBytes = 1e9
	jobs[1].DatasetBytes = 5e8
	jobs[1].Duration = 50 * s
	r := &recorder{Policy: simtest.NewPriority(sched.SuspendBoundary)}
	run(t, simtest.Cluster(1, 4), jobs, r, handConfig())
	// a runs from 15; at 37 it has 22 s (2 epochs of 10 s, the second ended at 35) and is
	// preempted at the boundary; it reaches 30 s at 45, writes 2 s, frees at 47 (window
	// 37..47 read 8 s of data). b runs 62..112 (5 epochs). a resumes at 112, warm until
	// 128, ends at 198.
	want := []obs{
		{Kind: sched.EventSubmitted, Job: "a", Phase: sched.Queued},
		{Kind: sched.EventStarted, Job: "a", Phase: sched.Running},
		{Kind: sched.EventEpoch, Job: "a", T: 35, D: 10, Bytes: 1e9, Phase: sched.Running, EpochsOK: 2},
		{Kind: sched.EventTraffic, Job: "a", T: 37, D: 22, Bytes: 22e8, Phase: sched.Running, EpochsOK: 2},
		{Kind: sched.EventSubmitted, Job: "b", T: 37, Phase: sched.Queued},
		{Kind: sched.EventEpoch, Job: "a", T: 45, D: 10, Bytes: 1e9, Phase: sched.Suspending, EpochsOK: 3},
		{Kind: sched.EventTraffic, Job: "a", T: 47, D: 10, Bytes: 8e8, Phase: sched.Suspending, EpochsOK: 3},
		{Kind: sched.EventSuspended, Job: "a", T: 47, D: 10, Phase: sched.Queued, EpochsOK: 3},
		{Kind: sched.EventStarted, Job: "b", T: 47, Phase: sched.Running},
		// No cycle runs between 47 and b's end (no event, and the policy asks for no
		// wake-up), so b's progress is reported once, at 112: its latest epoch and the
		// traffic since its warm-up ended at 62.
		{Kind: sched.EventEpoch, Job: "b", T: 112, D: 10, Bytes: 5e8, Phase: sched.Running, EpochsOK: 5},
		{Kind: sched.EventTraffic, Job: "b", T: 112, D: 50, Bytes: 25e8, Phase: sched.Running, EpochsOK: 5},
		{Kind: sched.EventFinished, Job: "b", T: 112, D: 65, Phase: sched.Finished, EpochsOK: 5},
		{Kind: sched.EventStarted, Job: "a", T: 112, Phase: sched.Running, EpochsOK: 3},
		{Kind: sched.EventResumed, Job: "a", T: 128, D: 16, Phase: sched.Running, EpochsOK: 3},
		{Kind: sched.EventEpoch, Job: "a", T: 198, D: 10, Bytes: 1e9, Phase: sched.Running, EpochsOK: 10},
		{Kind: sched.EventTraffic, Job: "a", T: 198, D: 70, Bytes: 7e9, Phase: sched.Running, EpochsOK: 10},
		{Kind: sched.EventFinished, Job: "a", T: 198, D: 133, Phase: sched.Finished, EpochsOK: 10},
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSnapshotFields(t *testing.T) {
	r := &recorder{Policy: simtest.NewPriority(sched.SuspendNow), at: map[time.Duration]bool{37 * s: true, 67 * s: true}, seen: map[string]sched.Job{}}
	run(t, simtest.Cluster(1, 4), twoJobs(), r, handConfig())
	type view struct {
		Phase                                                   sched.Phase
		EpochsDone, Preemptions                                 int32
		Attained, EpochTime, SinceCheckpoint, Remaining, WarmAt time.Duration
		Placed, Reserved                                        int
	}
	viewOf := func(j sched.Job) view {
		var warm time.Duration
		if !j.WarmUntil.IsZero() {
			warm = j.WarmUntil.Sub(Epoch)
		}
		return view{Phase: j.Phase, EpochsDone: j.EpochsDone, Preemptions: j.Preemptions, Attained: j.Attained,
			EpochTime: j.EpochTime, SinceCheckpoint: j.SinceCheckpoint, Remaining: j.Oracle.Remaining,
			WarmAt: warm, Placed: len(j.Placement), Reserved: len(j.Reserved)}
	}
	got := map[string]view{}
	for k, j := range r.seen {
		got[k] = viewOf(j)
	}
	want := map[string]view{
		// At 37: a has run 22 s since warm-up ended at 15; 4 GPUs x 37 s attained.
		"a@37s": {Phase: sched.Running, EpochsDone: 2, Attained: 148 * s, EpochTime: 10 * s, SinceCheckpoint: 2 * s, Remaining: 78 * s, WarmAt: 15 * s, Placed: 1},
		"b@37s": {Phase: sched.Queued, Remaining: 50 * s},
		// At 67: a's GPUs are free (suspend now at 37, grace 30 s): it resumes from 20 s.
		"a@1m7s": {Phase: sched.Queued, EpochsDone: 2, Preemptions: 1, Attained: 268 * s, EpochTime: 10 * s, Remaining: 80 * s, WarmAt: 15 * s},
		"b@1m7s": {Phase: sched.Queued, Remaining: 50 * s, Reserved: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot jobs (-want +got):\n%s", diff)
	}
}

func TestInvalidRuns(t *testing.T) {
	overcommit := &simtest.Func{PolicyName: "overcommit", F: func(snap *sched.Snapshot) sched.Decisions {
		var d sched.Decisions
		for _, j := range snap.Jobs {
			if j.Phase == sched.Queued {
				d.Starts = append(d.Starts, sched.Start{JobID: j.ID, Placement: []sched.Slot{{Node: "node-0", Workers: j.Workers, GPUs: j.GPUs()}}})
			}
		}
		return d
	}}
	idle := &simtest.Func{PolicyName: "idle", F: func(*sched.Snapshot) sched.Decisions { return sched.Decisions{} }}
	both := []traces.Job{
		simtest.MakeTraceJob("a").Gang(1, 4).Obj(),
		simtest.MakeTraceJob("b").Gang(1, 4).Obj(),
	}
	unchecked := handConfig()
	unchecked.Check = false
	cases := map[string]struct {
		jobs   []traces.Job
		policy sched.Policy
		cfg    Config
		want   []string // substrings of the error
	}{
		"over-commit, checked": {jobs: both, policy: overcommit, cfg: handConfig(),
			want: []string{"at 0s", "node-0", "over-committed", "b"}},
		"over-commit, unchecked": {jobs: both, policy: overcommit, cfg: unchecked,
			want: []string{"at 0s", "start of job b", "node node-0"}},
		"never starts": {jobs: both[:1], policy: idle, cfg: Config{MaxIdleWakes: 3, Physics: handPhysics()},
			want: []string{"idle", "left 1 jobs", "[a]"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := New(simtest.Cluster(1, 4), tc.jobs, tc.policy, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Run(context.Background())
			if err == nil {
				t.Fatal("run succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestRejectAndReshape(t *testing.T) {
	explicit := simtest.MakeTraceJob("explicit").Gang(1, 8).Obj()
	synthesized := simtest.MakeTraceJob("synthesized").Gang(1, 8).Obj()
	synthesized.Synthesized = traces.FieldSet(traces.FieldWorkers)
	huge := simtest.MakeTraceJob("huge").Gang(4, 4).Obj()
	huge.Synthesized = traces.FieldSet(traces.FieldWorkers)
	r := run(t, simtest.Cluster(2, 4), []traces.Job{explicit, synthesized, huge}, simtest.NewFIFO(), handConfig())
	type out struct {
		ID       string
		Rejected bool
		GPUs     int32
	}
	var got []out
	for _, j := range r.Jobs {
		got = append(got, out{j.ID, j.Rejected, j.GPUs})
	}
	// explicit: one worker of 8 GPUs never fits a 4-GPU node. synthesized: reshaped to
	// 2 workers of 4. huge: 16 GPUs on an 8-GPU cluster.
	want := []out{{"explicit", true, 8}, {"synthesized", false, 8}, {"huge", true, 16}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := New(simtest.Cluster(1, 4), []traces.Job{explicit, explicit}, simtest.NewFIFO(), handConfig()); err == nil {
		t.Error("duplicate job IDs accepted")
	}
}

func TestNoise(t *testing.T) {
	jobs := []traces.Job{
		simtest.MakeTraceJob("a").Gang(1, 4).Duration(100 * s).Epochs(10).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("b").Gang(1, 4).Duration(50 * s).Priority(10).Submit(37 * s).Obj(),
	}
	noisy := func(seed int64) Config {
		c := handConfig()
		c.Physics.NoiseSigma, c.Seed = 0.3, seed
		return c
	}
	p := func() sched.Policy { return simtest.NewPriority(sched.SuspendBoundary) }
	r1 := run(t, simtest.Cluster(1, 4), jobs, p(), noisy(7))
	r2 := run(t, simtest.Cluster(1, 4), jobs, p(), noisy(7))
	r3 := run(t, simtest.Cluster(1, 4), jobs, p(), noisy(8))
	if diff := cmp.Diff(r1.Jobs, r2.Jobs); diff != "" {
		t.Errorf("same seed, different runs:\n%s", diff)
	}
	if cmp.Equal(r1.Jobs, r3.Jobs) {
		t.Error("different seeds gave identical runs")
	}
	if r1.Jobs[0].StartOverhead == 15*s || r1.Jobs[0].ResumeOverhead == 16*s || r1.Jobs[0].SuspendWait == 2*s {
		t.Errorf("noise did not change the overheads: %+v", r1.Jobs[0])
	}
}
