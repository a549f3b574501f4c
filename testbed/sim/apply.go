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
		if err := e.checkSlots(j, r.Placement, false); err != nil {
			return fmt.Errorf("reservation for job %s: %w", j.s.ID, err)
		}
		e.reserve(j, t, r.Placement)
	}
	for _, s := range d.Starts {
		j, err := e.lookup(s.JobID)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		if j.s.Phase != sched.Queued {
			return fmt.Errorf("start of job %s in phase %s", j.s.ID, j.s.Phase)
		}
		if err := e.checkSlots(j, s.Placement, true); err != nil {
			return fmt.Errorf("start of job %s: %w", j.s.ID, err)
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
// that the GPUs are free and not reserved for another job.
func (e *Engine) checkSlots(j *job, slots []sched.Slot, start bool) error {
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
		if !start {
			continue
		}
		if n.Unschedulable {
			return fmt.Errorf("node %s is unschedulable", n.Name)
		}
		free := n.GPUs - n.Used - (e.reservedOn[ni] - reservedBy(j, s.Node))
		if need > free {
			return fmt.Errorf("node %s: %d GPUs asked, %d free and not reserved for another job (used %d, reserved %d)", n.Name, need, free, n.Used, e.reservedOn[ni])
		}
	}
	if workers != j.s.Workers {
		return fmt.Errorf("placement has %d workers, job has %d", workers, j.s.Workers)
	}
	return nil
}

// reservedBy is the number of GPUs on node reserved for j.
func reservedBy(j *job, node string) int32 {
	var g int32
	for _, s := range j.s.Reserved {
		if s.Node == node {
			g += s.GPUs
		}
	}
	return g
}
