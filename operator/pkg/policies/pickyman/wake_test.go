package pickyman

import (
	"testing"
	"time"

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
	if d := p.Schedule(snap(now.Add(2 * time.Second))); len(d.Preemptions) != 0 {
		t.Fatalf("preempted a protected job: %+v", d.Preemptions)
	}
	d := p.Schedule(snap(now.Add(5 * time.Second)))
	if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "long" {
		t.Fatalf("after the protection expired, want long preempted for short; got %+v", d)
	}
}
