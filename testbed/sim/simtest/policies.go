package simtest

import (
	"slices"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Func is a policy made from a function.
type Func struct {
	PolicyName string
	F          func(s *sched.Snapshot) sched.Decisions
}

var _ sched.Policy = (*Func)(nil)

// Name returns the policy's name.
func (f *Func) Name() string { return f.PolicyName }

// Schedule calls F.
func (f *Func) Schedule(s *sched.Snapshot) sched.Decisions { return f.F(s) }

// FirstFit places a gang on free GPUs (minus those reserved for other jobs and minus
// taken, GPUs already promised in this cycle), filling nodes in order. It returns nil if
// the gang does not fit.
func FirstFit(s *sched.Snapshot, j *sched.Job, taken map[string]int32) []sched.Slot {
	reserved := map[string]int32{}
	for _, o := range s.Jobs {
		if o.ID == j.ID {
			continue
		}
		for _, r := range o.Reserved {
			reserved[r.Node] += r.GPUs
		}
	}
	var slots []sched.Slot
	left := j.Workers
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if left == 0 {
			break
		}
		if j.GPUModel != "" && n.GPUModel != j.GPUModel {
			continue
		}
		free := n.GPUs - n.Used - reserved[n.Name] - taken[n.Name]
		w := min(free/j.GPUsPerWorker, left)
		if w > 0 {
			slots = append(slots, sched.Slot{Node: n.Name, Workers: w, GPUs: w * j.GPUsPerWorker})
			left -= w
		}
	}
	if left > 0 {
		return nil
	}
	for _, sl := range slots {
		taken[sl.Node] += sl.GPUs
	}
	return slots
}

// queuedBySubmit returns the queued jobs in submit order (then ID).
func queuedBySubmit(s *sched.Snapshot) []*sched.Job {
	var q []*sched.Job
	for _, j := range s.Jobs {
		if j.Phase == sched.Queued {
			q = append(q, j)
		}
	}
	slices.SortStableFunc(q, func(a, b *sched.Job) int {
		if c := a.Submit.Compare(b.Submit); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return q
}

// NewFIFO returns a strict first-in-first-out policy without preemption: the oldest queued
// job starts when its gang fits; nothing overtakes it.
func NewFIFO() *Func {
	return &Func{PolicyName: "test-fifo", F: func(s *sched.Snapshot) sched.Decisions {
		var d sched.Decisions
		taken := map[string]int32{}
		for _, j := range queuedBySubmit(s) {
			p := FirstFit(s, j, taken)
			if p == nil {
				break
			}
			d.Starts = append(d.Starts, sched.Start{JobID: j.ID, Placement: p})
		}
		return d
	}}
}

// NewPriority returns a policy that starts queued jobs by priority then submit order and,
// when the first queued job does not fit, preempts running jobs of lower priority (lowest
// first) with mode until it would fit, reserving the GPUs they free for it.
func NewPriority(mode sched.SuspendMode) *Func {
	return &Func{PolicyName: "test-priority-" + string(mode), F: func(s *sched.Snapshot) sched.Decisions {
		var d sched.Decisions
		q := queuedBySubmit(s)
		slices.SortStableFunc(q, func(a, b *sched.Job) int { return int(b.Priority - a.Priority) })
		taken := map[string]int32{}
		for _, j := range q {
			if p := FirstFit(s, j, taken); p != nil {
				d.Starts = append(d.Starts, sched.Start{JobID: j.ID, Placement: p})
				continue
			}
			if j.Reserved != nil {
				break
			}
			var victims []*sched.Job
			for _, r := range s.Jobs {
				if r.Phase == sched.Running && r.Priority < j.Priority {
					victims = append(victims, r)
				}
			}
			slices.SortStableFunc(victims, func(a, b *sched.Job) int { return int(a.Priority - b.Priority) })
			var freed []sched.Slot
			var got int32
			for _, v := range victims {
				if got >= j.GPUs() {
					break
				}
				d.Preemptions = append(d.Preemptions, sched.Preemption{JobID: v.ID, Mode: mode, For: j.ID, Reason: "Priority"})
				freed = append(freed, v.Placement...)
				for _, sl := range v.Placement {
					got += sl.GPUs
				}
			}
			if got >= j.GPUs() {
				d.Reservations = append(d.Reservations, sched.Reservation{JobID: j.ID, Placement: fit(freed, j)})
			}
			break
		}
		return d
	}}
}

// fit takes whole workers of j from freed slots.
func fit(freed []sched.Slot, j *sched.Job) []sched.Slot {
	var out []sched.Slot
	left := j.Workers
	for _, f := range freed {
		w := min(f.GPUs/j.GPUsPerWorker, left)
		if w > 0 {
			out = append(out, sched.Slot{Node: f.Node, Workers: w, GPUs: w * j.GPUsPerWorker})
			left -= w
		}
	}
	return out
}
