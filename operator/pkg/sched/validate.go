package sched

import (
	"errors"
	"fmt"
)

// Validate checks decisions against the snapshot they were made for. The simulator and
// the operator call it on every decision; it returns every violation found, joined:
//
//   - every decision names a job of the snapshot, and no job is decided twice;
//   - only Queued jobs are started or get reservations, only Running jobs are preempted
//     (a Suspending job is never preempted again), with a known suspend mode, and a
//     preemption For a job names a Queued job;
//   - only elastic jobs are resized, at the boundary, to a placement of a size they allow;
//   - every placement and reservation matches the job's gang shape (CheckShape), lies on
//     existing schedulable nodes, and on nodes of the job's GPU model if it names one;
//   - no node is over-committed: its used GPUs, plus the GPUs of the jobs started on it,
//     plus the GPUs held there by reservations (the reservation of each queued job that is
//     not started, the new one if the decisions replace it, less the GPUs that jobs
//     suspending or being preempted for that job still hold there, see HoldOf) stay within
//     its GPUs, plus the GPUs a grow adds there. A node the snapshot itself already
//     over-commits is reported only if the decisions add to it.
func Validate(s *Snapshot, d Decisions) error {
	ix := NewIndex(s)
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	nodes := make(map[string]*Node, len(s.Nodes))
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	checkPlacement := func(what string, j *Job, p []Slot) {
		if err := CheckShape(j, p); err != nil {
			fail("%s %s: %v", what, j.ID, err)
		}
		for _, sl := range p {
			n, ok := nodes[sl.Node]
			if !ok {
				fail("%s %s: unknown node %q", what, j.ID, sl.Node)
				continue
			}
			if n.Unschedulable {
				fail("%s %s: node %q is unschedulable", what, j.ID, sl.Node)
			}
			if j.GPUModel != "" && n.GPUModel != j.GPUModel {
				fail("%s %s: node %q has GPU model %q, job needs %q", what, j.ID, sl.Node, n.GPUModel, j.GPUModel)
			}
		}
	}

	started := make(map[string]bool, len(d.Starts))
	for _, st := range d.Starts {
		j := ix.Job(st.JobID)
		switch {
		case j == nil:
			fail("start %s: unknown job", st.JobID)
			continue
		case started[st.JobID]:
			fail("start %s: started twice", st.JobID)
			continue
		case j.Phase != Queued:
			fail("start %s: job is %s, not Queued", st.JobID, j.Phase)
		}
		started[st.JobID] = true
		checkPlacement("start", j, st.Placement)
	}

	preempted := make(map[string]bool, len(d.Preemptions))
	freeing := make(map[string][]*Job) // new victims by the job they free GPUs for
	var added []Slot                   // GPUs that grows promise
	for _, p := range d.Preemptions {
		j := ix.Job(p.JobID)
		switch {
		case j == nil:
			fail("preemption %s: unknown job", p.JobID)
			continue
		case preempted[p.JobID]:
			fail("preemption %s: preempted twice", p.JobID)
			continue
		case j.Phase != Running:
			fail("preemption %s: job is %s, not Running", p.JobID, j.Phase)
		}
		preempted[p.JobID] = true
		if p.Mode != SuspendNow && p.Mode != SuspendBoundary {
			fail("preemption %s: unknown suspend mode %q", p.JobID, p.Mode)
		}
		victim := j
		if p.Resize != nil {
			switch {
			case !j.Elastic():
				fail("resize %s: job is not elastic", p.JobID)
			case p.Mode != SuspendBoundary:
				fail("resize %s: mode %q, a resize checkpoints at the boundary", p.JobID, p.Mode)
			}
			checkPlacement("resize", j, p.Resize)
			added = append(added, Added(j.Placement, p.Resize)...)
			c := *j
			c.Suspend = &SuspendState{Mode: p.Mode, For: p.For, Resize: p.Resize}
			victim = &c
		}
		if p.For != "" {
			if q := ix.Job(p.For); q == nil || q.Phase != Queued {
				fail("preemption %s: for %s, which is not a queued job", p.JobID, p.For)
			}
			freeing[p.For] = append(freeing[p.For], victim)
		}
	}

	reserved := make(map[string][]Slot, len(d.Reservations))
	for _, r := range d.Reservations {
		j := ix.Job(r.JobID)
		switch {
		case j == nil:
			fail("reservation %s: unknown job", r.JobID)
			continue
		case reserved[r.JobID] != nil:
			fail("reservation %s: reserved twice", r.JobID)
			continue
		case j.Phase != Queued:
			fail("reservation %s: job is %s, not Queued", r.JobID, j.Phase)
		case started[r.JobID]:
			fail("reservation %s: job is also started", r.JobID)
		}
		reserved[r.JobID] = r.Placement
		checkPlacement("reservation", j, r.Placement)
	}

	// Node accounting, before and after the decisions.
	before := make(map[string]int32, len(s.Nodes))
	after := make(map[string]int32, len(s.Nodes))
	for i := range s.Nodes {
		before[s.Nodes[i].Name] = s.Nodes[i].Used
		after[s.Nodes[i].Name] = s.Nodes[i].Used
	}
	for _, st := range d.Starts {
		for _, sl := range st.Placement {
			after[sl.Node] += sl.GPUs
		}
	}
	for _, sl := range added {
		after[sl.Node] += sl.GPUs
	}
	for _, q := range ix.Queued {
		for _, sl := range ix.Hold(q) {
			before[sl.Node] += sl.GPUs
		}
		if started[q.ID] {
			continue
		}
		r, ok := reserved[q.ID]
		if !ok {
			r = q.Reserved
		}
		fr := append(append([]*Job(nil), ix.FreeingFor(q.ID)...), freeing[q.ID]...)
		for _, sl := range HoldOf(r, fr) {
			after[sl.Node] += sl.GPUs
		}
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if a := after[n.Name]; a > n.GPUs && a > before[n.Name] {
			fail("node %s over-committed: %d GPUs promised (used %d, starts, grows and reservations %d), has %d",
				n.Name, a, n.Used, a-n.Used, n.GPUs)
		}
	}
	return errors.Join(errs...)
}
