package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/policies/tiresias"
	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
	"github.com/pickyman/pickyman/traces"
)

// overloaded is a generated trace at offered load 2 on 4x8: the queue stays long for most of
// the run, the case a fixed tick made expensive.
func overloaded() ([]traces.Job, traces.Cluster) {
	cfg := traces.DefaultGenerateConfig()
	cfg.Jobs, cfg.Load, cfg.ClusterGPUs = 300, 2, 32
	return traces.Generate(cfg), simtest.Cluster(4, 8)
}

// TestPollChangesNothing: FIFO, SJF, SRTF and Kueue decide only at events (they are not
// sched.Wakers), so a one-minute poll (the engine's former fixed tick) changes no job's
// record; it only adds events.
func TestPollChangesNothing(t *testing.T) {
	jobs, cluster := overloaded()
	for _, name := range []string{"fifo", "sjf", "srtf", "kueue"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			polled := DefaultConfig()
			polled.Check, polled.Tick = true, time.Minute
			events := DefaultConfig()
			events.Check = true
			a, b := runTrace(t, jobs, cluster, name, polled), runTrace(t, jobs, cluster, name, events)
			if diff := cmp.Diff(recs(a), recs(b)); diff != "" {
				t.Errorf("records differ with and without the poll (-poll +events):\n%s", diff)
			}
			if b.Events >= a.Events {
				t.Errorf("events: %d without the poll, %d with it", b.Events, a.Events)
			}
		})
	}
}

// TestEventsPerJob: on an overloaded cluster every registered policy costs a bounded number
// of events per job (arrivals, finishes, suspends, resumes, wake-ups), not one per minute
// of queueing.
func TestEventsPerJob(t *testing.T) {
	jobs, cluster := overloaded()
	for _, name := range policies.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Check = true
			r := runTrace(t, jobs, cluster, name, cfg)
			if per := float64(r.Events) / float64(len(jobs)); per > 12 {
				t.Errorf("%d events for %d jobs: %.1f per job, want at most 12", r.Events, len(jobs), per)
			}
		})
	}
}

// TestTiresiasDemotesAtTheCrossing: a running job is demoted the moment its attained
// service crosses the queue threshold, not at the next poll. a (4 GPUs) attains 3600 GPU-s
// at 900 s; b, waiting since 100 s, preempts it then and starts after the 30 s grace period.
// Without NextWake, a one-minute poll begun at b's arrival notices the crossing at 940 s.
func TestTiresiasDemotesAtTheCrossing(t *testing.T) {
	jobs := []traces.Job{
		simtest.MakeTraceJob("a").Gang(1, 4).Duration(5000 * s).Epochs(50).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("b").Gang(1, 4).Duration(100 * s).Epochs(10).Checkpoint(2e9).Submit(100 * s).Obj(),
	}
	for _, tc := range []struct {
		poll  bool
		start time.Duration
	}{{false, 930 * s}, {true, 970 * s}} {
		var p sched.Policy
		p, err := tiresias.New(tiresias.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := handConfig()
		if tc.poll {
			p = struct{ sched.Policy }{p} // hides NextWake
			cfg.Tick = time.Minute
		}
		r := run(t, simtest.Cluster(1, 4), jobs, p, cfg)
		if got := r.Jobs[1].FirstStart; r.Jobs[1].ID != "b" || got != tc.start {
			t.Errorf("poll %v: %s first started at %v, want %v", tc.poll, r.Jobs[1].ID, got, tc.start)
		}
	}
}

// TestCycleFollowsDecisions: a cycle that started or preempted a job is followed at the
// same instant by another, as the operator's writes trigger its next cycle: here the job a
// cycle starts becomes a victim at once, not at the next event (its own end, 1,000 s on).
func TestCycleFollowsDecisions(t *testing.T) {
	jobs := []traces.Job{
		simtest.MakeTraceJob("long").Gang(1, 4).Duration(1000 * s).Epochs(10).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("short").Gang(1, 4).Duration(10 * s).Epochs(1).Checkpoint(2e9).Obj(),
	}
	slot := []sched.Slot{{Node: "node-0", Workers: 1, GPUs: 4}}
	// The policy starts long when the node is free and nothing is reserved; with long
	// running and short waiting it preempts long for short; short starts on its reservation.
	p := &simtest.Func{PolicyName: "starts-then-preempts", F: func(snap *sched.Snapshot) sched.Decisions {
		by := map[string]*sched.Job{}
		for _, j := range snap.Jobs {
			by[j.ID] = j
		}
		long, short := by["long"], by["short"]
		free := snap.Nodes[0].Used == 0
		switch {
		case short != nil && short.Phase == sched.Queued && short.Reserved != nil && free:
			return sched.Decisions{Starts: []sched.Start{{JobID: "short", Placement: slot}}}
		case long != nil && long.Phase == sched.Queued && free && (short == nil || short.Reserved == nil):
			return sched.Decisions{Starts: []sched.Start{{JobID: "long", Placement: slot}}}
		case long != nil && long.Phase == sched.Running && short != nil && short.Phase == sched.Queued && short.Reserved == nil:
			return sched.Decisions{
				Preemptions:  []sched.Preemption{{JobID: "long", Mode: sched.SuspendNow, For: "short", Reason: "Test"}},
				Reservations: []sched.Reservation{{JobID: "short", Placement: slot}},
			}
		}
		return sched.Decisions{}
	}}
	r := run(t, simtest.Cluster(1, 4), jobs, p, handConfig())
	got := map[string]time.Duration{}
	for _, j := range r.Jobs {
		got[j.ID] = j.FirstStart
	}
	// long starts at 0 and is preempted at 0; its GPUs free after the 30 s grace period.
	if got["long"] != 0 || got["short"] != 30*s {
		t.Errorf("first starts %v, want long at 0 and short at 30s (preempted in the cycle after long started)", got)
	}
}
