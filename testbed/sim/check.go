package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// checkState checks the invariants after a cycle at time t: every node's used GPUs equal
// the placements of the jobs that hold them and fit the node; used GPUs plus the GPUs
// that reservations hold out of the free ones (sched.Index.ReservedOn) fit the node; progress lies within [0, service].
func (e *Engine) checkState(t time.Duration) error {
	used := make([]int32, len(e.nodes))
	committed := make([]int32, len(e.nodes))
	for node, g := range sched.NewIndex(&e.snap).ReservedOn() {
		committed[e.nodeIndex[node]] += g
	}
	queued, holding := 0, 0
	for _, j := range e.active {
		if j.finished {
			continue
		}
		if j.s.Phase == sched.Queued {
			queued++
			if j.s.Placement != nil {
				return fmt.Errorf("sim: at %v queued job %s has a placement", t, j.s.ID)
			}
			continue
		}
		holding++
		for _, s := range j.s.Placement {
			ni := e.nodeIndex[s.Node]
			used[ni] += s.GPUs
			committed[ni] += s.GPUs
		}
		if p := j.progressAt(t); p < 0 || p > j.work || j.p0 < 0 || j.ckpt < 0 || j.ckpt > j.work {
			return fmt.Errorf("sim: at %v job %s has progress %v of %v (checkpoint %v)", t, j.s.ID, p, j.work, j.ckpt)
		}
	}
	for i := range e.nodes {
		n := &e.nodes[i]
		if used[i] == n.Used && n.Used <= n.GPUs && committed[i] <= n.GPUs {
			continue
		}
		var holders string
		for _, j := range e.active {
			if !j.finished && sched.GPUsOn(j.s.Placement, n.Name) > 0 {
				holders += " " + j.s.ID
			}
		}
		if used[i] != n.Used {
			return fmt.Errorf("sim: at %v node %s counts %d GPUs used, its jobs (%s) hold %d", t, n.Name, n.Used, holders, used[i])
		}
		if n.Used > n.GPUs {
			return fmt.Errorf("sim: at %v node %s is over-committed: %d of %d GPUs held by%s", t, n.Name, n.Used, n.GPUs, holders)
		}
		if committed[i] > n.GPUs {
			return fmt.Errorf("sim: at %v node %s is over-committed counting reservations: %d of %d GPUs (held by%s, %d reserved)", t, n.Name, committed[i], n.GPUs, holders, committed[i]-used[i])
		}
	}
	if queued != e.queued || holding != e.holding {
		return fmt.Errorf("sim: at %v counts %d queued and %d holding jobs, state has %d and %d", t, e.queued, e.holding, queued, holding)
	}
	return nil
}

// checkEnd checks that no job was lost: every submitted job finished exactly once or was
// rejected, and every job's held time splits into service plus overheads.
func (e *Engine) checkEnd() error {
	var done int
	for _, j := range e.jobs {
		if j.rec.Rejected {
			done++
			continue
		}
		if !j.finished {
			return fmt.Errorf("sim: job %s never finished (phase %s)", j.s.ID, j.s.Phase)
		}
		done++
		r := &j.rec
		// An elastic job that ran at other sizes did its service in another time: its held
		// time splits into the time it made progress plus the overheads.
		service := r.Service
		if j.varied {
			service = j.productive - r.RedoneWork
		} else if e.cfg.Check && j.productive-r.RedoneWork != r.Service {
			return fmt.Errorf("sim: job %s made progress for %v (%v redone), service is %v", j.s.ID, j.productive, r.RedoneWork, r.Service)
		}
		parts := service + r.RedoneWork + r.StartOverhead + r.ResumeOverhead + r.SuspendWait + e.cfg.Physics.FinishDelay
		if e.cfg.Check && parts != r.Held {
			return fmt.Errorf("sim: job %s held GPUs %v, but service+redone+overheads = %v", j.s.ID, r.Held, parts)
		}
		if r.Finish < r.FirstStart || r.FirstStart < r.Submit || r.Wait() < 0 {
			return fmt.Errorf("sim: job %s has submit %v, first start %v, finish %v, held %v", j.s.ID, r.Submit, r.FirstStart, r.Finish, r.Held)
		}
	}
	if done != len(e.jobs) || int(e.finished.Load()) != len(e.jobs) {
		return fmt.Errorf("sim: %d jobs submitted, %d finished or rejected", len(e.jobs), done)
	}
	return nil
}

// describe lists decisions briefly for error messages: "start b on node-0:4, ...".
func describe(d *sched.Decisions) string {
	var parts []string
	slots := func(p []sched.Slot) string {
		var s []string
		for _, sl := range p {
			s = append(s, fmt.Sprintf("%s:%d", sl.Node, sl.GPUs))
		}
		return strings.Join(s, "+")
	}
	for _, p := range d.Preemptions {
		if p.Resize != nil {
			parts = append(parts, fmt.Sprintf("resize %s to %s (for %q)", p.JobID, slots(p.Resize), p.For))
			continue
		}
		parts = append(parts, fmt.Sprintf("preempt %s (%s, for %q)", p.JobID, p.Mode, p.For))
	}
	for _, r := range d.Reservations {
		parts = append(parts, fmt.Sprintf("reserve %s on %s", r.JobID, slots(r.Placement)))
	}
	for _, st := range d.Starts {
		parts = append(parts, fmt.Sprintf("start %s on %s", st.JobID, slots(st.Placement)))
	}
	if len(parts) > 20 {
		parts = append(parts[:20], fmt.Sprintf("and %d more", len(parts)-20))
	}
	return strings.Join(parts, ", ")
}
