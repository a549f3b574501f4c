package pickyman

import (
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// TestNewNodeWakesTheCycle: a node that joins the cluster (or gets its GPUs or labels) is no
// policy event, yet the waiting job it fits must start on the next cycle, not after Refresh.
func TestNewNodeWakesTheCycle(t *testing.T) {
	p := New(DefaultOptions())
	job := waitingJob("w", 1, 4, 10*time.Minute).Obj()
	p.Observe(sched.Event{Kind: sched.EventSubmitted, Time: now, Job: job})
	if d := p.Schedule(&sched.Snapshot{Now: now, Jobs: []*sched.Job{job}}); len(d.Starts) != 0 {
		t.Fatalf("started %+v on a cluster without nodes", d.Starts)
	}
	d := p.Schedule(&sched.Snapshot{Now: now.Add(time.Second), Nodes: []sched.Node{{Name: "a", GPUs: 4}}, Jobs: []*sched.Job{job}})
	if len(d.Starts) != 1 || d.Starts[0].JobID != "w" {
		t.Fatalf("a node with 4 free GPUs joined; want w started, got %+v", d)
	}
}

// TestUnreportedArrivalWakesTheCycle: the operator's events and its snapshots come from
// different reads of the API server, so a job may show up in a snapshot after the event
// that reported it was spent on an older one. A queued job the last full cycle did not see
// makes the cycle full.
func TestUnreportedArrivalWakesTheCycle(t *testing.T) {
	p := New(DefaultOptions())
	nodes := []sched.Node{{Name: "a", GPUs: 4}}
	job := waitingJob("w", 1, 4, 10*time.Minute).Obj()
	p.Observe(sched.Event{Kind: sched.EventSubmitted, Time: now, Job: job})
	if d := p.Schedule(&sched.Snapshot{Now: now, Nodes: nodes}); len(d.Starts) != 0 {
		t.Fatalf("started %+v with no job", d.Starts)
	}
	d := p.Schedule(&sched.Snapshot{Now: now.Add(time.Second), Nodes: nodes, Jobs: []*sched.Job{job}})
	if len(d.Starts) != 1 || d.Starts[0].JobID != "w" {
		t.Fatalf("want w started, got %+v", d)
	}
}

// TestFreedGPUsWakesTheCycle: GPUs freed on a node (a job's pods gone) without a Finished
// event the policy has seen yet still let the waiting job start.
func TestFreedGPUsWakesTheCycle(t *testing.T) {
	p := New(DefaultOptions())
	job := waitingJob("w", 1, 4, 10*time.Minute).Obj()
	p.Observe(sched.Event{Kind: sched.EventSubmitted, Time: now, Job: job})
	busy := []sched.Node{{Name: "a", GPUs: 4, Used: 4}}
	if d := p.Schedule(&sched.Snapshot{Now: now, Nodes: busy, Jobs: []*sched.Job{job}}); len(d.Starts) != 0 {
		t.Fatalf("started %+v on a full node", d.Starts)
	}
	free := []sched.Node{{Name: "a", GPUs: 4}}
	d := p.Schedule(&sched.Snapshot{Now: now.Add(time.Second), Nodes: free, Jobs: []*sched.Job{job}})
	if len(d.Starts) != 1 || d.Starts[0].JobID != "w" {
		t.Fatalf("want w started once the node's GPUs were free, got %+v", d)
	}
}
