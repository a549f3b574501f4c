package sim

import (
	"fmt"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// apply carries out a policy's decisions at time t: preemptions first, then reservations,
// then starts. Starts may use only GPUs that are free and not reserved for another job.
// A decision that can not be carried out is an error naming the job, the node and the time.
func (e *Engine) apply(t time.Duration, d *sched.Decisions) error {
	for _, p := range d.Preemptions {
		j, err := e.lookup(p.JobID)
		if err != nil {
			return fmt.Errorf("preemption: %w", err)
		}
		if j.s.Phase != sched.Running {
			return fmt.Errorf("preemption of job %s in phase %s", j.s.ID, j.s.Phase)
		}
		if p.Mode != sched.SuspendNow && p.Mode != sched.SuspendBoundary {
			return fmt.Errorf("preemption of job %s with unknown mode %q", j.s.ID, p.Mode)
		}
		if p.Resize != nil {
			if err := e.checkResize(j, p); err != nil {
				return fmt.Errorf("resize of job %s: %w", j.s.ID, err)
			}
		}
		e.preempt(j, t, p)
	}
	for _, r := range d.Reservations {
		j, err := e.lookup(r.JobID)
		if err != nil {
			return fmt.Errorf("reservation: %w", err)
		}
		if j.s.Phase != sched.Queued {
			return fmt.Errorf("reservation for job %s in phase %s", j.s.ID, j.s.Phase)
		}
		if err := e.checkSlots(j, r.Placement, nil); err != nil {
			return fmt.Errorf("reservation for job %s: %w", j.s.ID, err)
		}
		e.reserve(j, t, r.Placement)
	}
	if len(d.Starts) == 0 {
		return nil
	}
	// GPUs held out of the free GPUs by reservations (sched.Index.Hold): a reservation
	// less the GPUs that jobs suspending for it still hold.
	var ix *sched.Index
	held := map[string]int32{}
	if e.reservations > 0 {
		ix = e.scratch.Index(&e.snap)
		held = ix.ReservedOn()
	}
	for _, s := range d.Starts {
		j, err := e.lookup(s.JobID)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		if j.s.Phase != sched.Queued {
			return fmt.Errorf("start of job %s in phase %s", j.s.ID, j.s.Phase)
		}
		var own []sched.Slot
		if ix != nil {
			own = ix.Hold(&j.s)
		}
		others := map[string]int32{}
		for _, sl := range s.Placement {
			others[sl.Node] = held[sl.Node] - sched.GPUsOn(own, sl.Node)
		}
		if err := e.checkSlots(j, s.Placement, others); err != nil {
			return fmt.Errorf("start of job %s: %w", j.s.ID, err)
		}
		for _, sl := range own {
			held[sl.Node] -= sl.GPUs
		}
		e.start(j, t, s.Placement)
	}
	return nil
}

func (e *Engine) lookup(id string) (*job, error) {
	j, ok := e.byID[id]
	if !ok || j.rec.Rejected {
		return nil, fmt.Errorf("unknown job %q", id)
	}
	if j.finished {
		return nil, fmt.Errorf("job %s has finished", id)
	}
	if j.rec.Submit > e.now {
		return nil, fmt.Errorf("job %s has not been submitted yet", id)
	}
	return j, nil
}

// checkSlots checks that a placement is a valid gang placement for j: known nodes of the
// right GPU model, whole workers on each node, the job's worker count; for a start also
// that the GPUs are free and not held by reservations of other jobs (others, by node; nil
// for a reservation).
func (e *Engine) checkSlots(j *job, slots []sched.Slot, others map[string]int32) error {
	var workers int32
	for i, s := range slots {
		ni, ok := e.nodeIndex[s.Node]
		if !ok {
			return fmt.Errorf("unknown node %q", s.Node)
		}
		n := &e.nodes[ni]
		if j.s.GPUModel != "" && n.GPUModel != j.s.GPUModel {
			return fmt.Errorf("node %s has %q GPUs, job needs %q", n.Name, n.GPUModel, j.s.GPUModel)
		}
		if s.Workers <= 0 || s.GPUs != s.Workers*j.s.GPUsPerWorker {
			return fmt.Errorf("node %s: slot of %d workers and %d GPUs for workers of %d GPUs", n.Name, s.Workers, s.GPUs, j.s.GPUsPerWorker)
		}
		workers += s.Workers
		var need int32
		for _, o := range slots[:i+1] {
			if o.Node == s.Node {
				need += o.GPUs
			}
		}
		if need > n.GPUs {
			return fmt.Errorf("node %s: %d GPUs asked, node has %d", n.Name, need, n.GPUs)
		}
		if others == nil {
			continue
		}
		if n.Unschedulable {
			return fmt.Errorf("node %s is unschedulable", n.Name)
		}
		if free := n.GPUs - n.Used - others[s.Node]; need > free {
			return fmt.Errorf("node %s: %d GPUs asked, %d free and not reserved for another job (used %d, reserved %d)", n.Name, need, free, n.Used, others[s.Node])
		}
	}
	if lo, hi := j.s.Sizes(); workers < lo || workers > hi {
		return fmt.Errorf("placement has %d workers, job runs on %d to %d", workers, lo, hi)
	}
	return nil
}

// checkResize checks a resize of an elastic job: at the boundary, to a valid placement of
// a size the job allows, whose added GPUs are free and not reserved for another job.
func (e *Engine) checkResize(j *job, p sched.Preemption) error {
	if !j.s.Elastic() {
		return fmt.Errorf("job is not elastic")
	}
	if p.Mode != sched.SuspendBoundary {
		return fmt.Errorf("mode %q, a resize checkpoints at the boundary", p.Mode)
	}
	if err := e.checkSlots(j, p.Resize, nil); err != nil {
		return err
	}
	held := map[string]int32{}
	if e.reservations > 0 {
		held = e.scratch.Index(&e.snap).ReservedOn()
	}
	for _, sl := range sched.Added(j.s.Placement, p.Resize) {
		n := &e.nodes[e.nodeIndex[sl.Node]]
		if n.Unschedulable {
			return fmt.Errorf("node %s is unschedulable", n.Name)
		}
		if free := n.GPUs - n.Used - held[sl.Node]; sl.GPUs > free {
			return fmt.Errorf("node %s: %d GPUs added, %d free and not reserved for another job", n.Name, sl.GPUs, free)
		}
	}
	return nil
}
