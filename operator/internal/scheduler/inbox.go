package scheduler

import (
	"sync"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Inbox is how the controllers reach the scheduler: they queue the events they observe (a
// job submitted, finished, suspended) and ask for a cycle. The scheduler delivers the
// queued events at the start of its next cycle, before it reads the snapshot: an event is
// queued only after the write it reports, so every delivered event is already in the
// snapshot the policy then decides on. A policy told of an event mid-cycle could spend it on
// a snapshot that predates it, and skip the next cycle as if nothing had changed.
//
// The methods of a nil Inbox do nothing.
type Inbox struct {
	mu      sync.Mutex
	pending []sched.Event
	// observed is whether anyone reads the events (the policy learns from them).
	observed bool
	wake     chan struct{}
}

// NewInbox returns an empty inbox.
func NewInbox() *Inbox { return &Inbox{wake: make(chan struct{}, 1)} }

// Trigger asks the scheduler for a cycle; requests are coalesced.
func (in *Inbox) Trigger() {
	if in == nil {
		return
	}
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// Observe queues an event for the policy's next cycle (dropped when the policy does not
// learn from events, or the event names no job).
func (in *Inbox) Observe(ev sched.Event) {
	if in == nil || ev.Job == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.observed {
		in.pending = append(in.pending, ev)
	}
}

// take returns the queued events and empties the queue.
func (in *Inbox) take() []sched.Event {
	in.mu.Lock()
	defer in.mu.Unlock()
	evs := in.pending
	in.pending = nil
	return evs
}

// requeue puts events back in front of the queue, for the next cycle.
func (in *Inbox) requeue(evs []sched.Event) {
	if len(evs) == 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.pending = append(evs, in.pending...)
}

func (in *Inbox) setObserved(on bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.observed = on
}
