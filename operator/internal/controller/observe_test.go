package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// callLog is a policy that records what it was told and when it decided.
type callLog struct{ calls []string }

func (r *callLog) Name() string { return "callLog" }
func (r *callLog) Schedule(*sched.Snapshot) sched.Decisions {
	r.calls = append(r.calls, "schedule")
	return sched.Decisions{}
}
func (r *callLog) Observe(ev sched.Event) { r.calls = append(r.calls, "observe "+ev.Job.ID) }

// TestEventsReachThePolicyAtTheNextCycle: an event the controllers observe is held until the
// scheduler's next cycle and delivered there before the policy decides, never in the middle
// of a cycle, so a policy that skips cycles without events cannot spend an event on a snapshot
// taken before the write it reports.
func TestEventsReachThePolicyAtTheNextCycle(t *testing.T) {
	h := newHarness(t, "fifo", gpuNode("n1", 8))
	rec := &callLog{}
	h.setPolicy(rec, nil)
	h.inbox.Observe(sched.Event{Kind: sched.EventSubmitted, Job: &sched.Job{ID: "ns/a"}})
	h.inbox.Observe(sched.Event{Kind: sched.EventSubmitted, Job: &sched.Job{ID: "ns/b"}})
	if len(rec.calls) != 0 {
		t.Fatalf("the policy was told between cycles: %v", rec.calls)
	}
	h.cycle()
	h.cycle()
	want := []string{"observe ns/a", "observe ns/b", "schedule", "schedule"}
	if d := cmp.Diff(want, rec.calls); d != "" {
		t.Errorf("policy calls (-want +got):\n%s", d)
	}
}
