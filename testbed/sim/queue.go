package sim

import "time"

type eventKind uint8

const (
	evFinish eventKind = iota
	evFree
	evWarm
	evTick
	evReservationTimeout
	// evWake is a wake-up the policy asked for (sched.Waker); gen is the engine's wakeGen.
	evWake
	// evDecided follows a cycle that decided something, at the same instant: the
	// decisions changed the snapshot (a started job may now be a victim), as their writes
	// trigger the operator's next cycle.
	evDecided
)

// event is a scheduled event. gen must match the job's generation (or reservation
// generation) when the event fires; otherwise the event is stale and ignored.
type event struct {
	at   time.Duration
	seq  uint64
	kind eventKind
	job  *job
	gen  uint32
}

// eventQueue is a binary min-heap of events keyed by (at, seq).
type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) Len() int { return len(q.items) }

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&q.items[i], &q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *eventQueue) peek() *event { return &q.items[0] }

func (q *eventQueue) pop() event {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items = q.items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&q.items[r], &q.items[l]) {
			m = r
		}
		if !less(&q.items[m], &q.items[i]) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}
