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
	if w, want := p.NextWake(), long.LastStart.Add(o.Protect); !w.Equal(want) {
		t.Errorf("NextWake = %v, want the end of long's protection (%v)", w, want)
	}
	if d := p.Schedule(snap(now.Add(2 * time.Second))); len(d.Preemptions) != 0 {
		t.Fatalf("preempted a protected job: %+v", d.Preemptions)
	}
	d := p.Schedule(snap(now.Add(5 * time.Second)))
	if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "long" {
		t.Fatalf("after the protection expired, want long preempted for short; got %+v", d)
	}
}

// TestPromotionWakesTheCycle: class aging raises a waiting job's class every Promote it has
// waited, which reorders the queue without an event; NextWake names the next such time and
// the cycle then is full, not skipped.
func TestPromotionWakesTheCycle(t *testing.T) {
	p := New(DefaultOptions()) // Promote 1 h, no Refresh
	long := epochJob("long", "a", 4, time.Hour, 20, 2, 5*time.Minute).Obj()
	long.LastStart = now.Add(-time.Minute) // protected: no victim, so nothing starts
	long.WarmUntil = long.LastStart
	high := waitingJob("high", 1, 4, 10*time.Minute).Priority(1).Obj()
	low := waitingJob("low", 1, 4, 10*time.Minute).Obj()
	low.Submit = now.Add(-20 * time.Minute)
	snap := func(at time.Time) *sched.Snapshot {
		return &sched.Snapshot{Now: at, Nodes: []sched.Node{{Name: "a", GPUs: 4, Used: 4}}, Jobs: []*sched.Job{long, high, low}}
	}
	p.Schedule(snap(now))
	protectEnd := long.LastStart.Add(DefaultOptions().Protect)
	if w := p.NextWake(); !w.Equal(protectEnd) {
		t.Fatalf("NextWake = %v, want the end of long's protection %v (before low's promotion)", w, protectEnd)
	}
	long.Preemptions = DefaultOptions().Budget // protected for good: only the promotion is left
	p.Observe(sched.Event{Kind: sched.EventStarted, Time: now, Job: long})
	p.Schedule(snap(now))
	if w, want := p.NextWake(), now.Add(40*time.Minute); !w.Equal(want) {
		t.Errorf("NextWake = %v, want low's promotion after 1 h of waiting (%v)", w, want)
	}
	if !p.due(now.Add(40*time.Minute)) || p.due(now.Add(39*time.Minute)) {
		t.Errorf("due: a cycle must be full from low's promotion on, and not before")
	}
}
