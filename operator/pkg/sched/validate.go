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
	v := newValidator(s)
	v.starts(d.Starts)
	v.preemptions(d.Preemptions)
	v.reservations(d.Reservations)
	v.nodeAccounting(d.Starts)
	return errors.Join(v.errs...)
}

// validator holds what Validate's phases learn about the decisions: which jobs they start,
// preempt and reserve, the victims they add for each queued job, and the GPUs grows add.
type validator struct {
	s     *Snapshot
	ix    *Index
	nodes map[string]*Node
	errs  []error

	started   map[string]bool
	preempted map[string]bool
	freeing   map[string][]*Job // new victims by the job they free GPUs for
	added     []Slot            // GPUs that grows promise
	reserved  map[string][]Slot
}

func newValidator(s *Snapshot) *validator {
	v := &validator{s: s, ix: NewIndex(s), nodes: make(map[string]*Node, len(s.Nodes)),
		started: map[string]bool{}, preempted: map[string]bool{}, freeing: map[string][]*Job{}, reserved: map[string][]Slot{}}
	for i := range s.Nodes {
		v.nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	return v
}

func (v *validator) fail(format string, a ...any) { v.errs = append(v.errs, fmt.Errorf(format, a...)) }

// placement checks a placement of j: its gang shape, and existing schedulable nodes of the
// job's GPU model.
func (v *validator) placement(what string, j *Job, p []Slot) {
	if err := CheckShape(j, p); err != nil {
		v.fail("%s %s: %v", what, j.ID, err)
	}
	for _, sl := range p {
		n, ok := v.nodes[sl.Node]
		if !ok {
			v.fail("%s %s: unknown node %q", what, j.ID, sl.Node)
			continue
		}
		if n.Unschedulable {
			v.fail("%s %s: node %q is unschedulable", what, j.ID, sl.Node)
		}
		if j.GPUModel != "" && n.GPUModel != j.GPUModel {
			v.fail("%s %s: node %q has GPU model %q, job needs %q", what, j.ID, sl.Node, n.GPUModel, j.GPUModel)
		}
	}
}

// starts: each names a queued job once, at a valid placement.
func (v *validator) starts(starts []Start) {
	for _, st := range starts {
		j := v.ix.Job(st.JobID)
		switch {
		case j == nil:
			v.fail("start %s: unknown job", st.JobID)
			continue
		case v.started[st.JobID]:
			v.fail("start %s: started twice", st.JobID)
			continue
		case j.Phase != Queued:
			v.fail("start %s: job is %s, not Queued", st.JobID, j.Phase)
		}
		v.started[st.JobID] = true
		v.placement("start", j, st.Placement)
	}
}

// preemptions: each names a running job once, with a known mode; a resize is of an elastic
// job at the boundary to a valid placement; For names a queued job.
func (v *validator) preemptions(preemptions []Preemption) {
	for _, p := range preemptions {
		j := v.ix.Job(p.JobID)
		switch {
		case j == nil:
			v.fail("preemption %s: unknown job", p.JobID)
			continue
		case v.preempted[p.JobID]:
			v.fail("preemption %s: preempted twice", p.JobID)
			continue
		case j.Phase != Running:
			v.fail("preemption %s: job is %s, not Running", p.JobID, j.Phase)
		}
		v.preempted[p.JobID] = true
		if p.Mode != SuspendNow && p.Mode != SuspendBoundary {
			v.fail("preemption %s: unknown suspend mode %q", p.JobID, p.Mode)
		}
		victim := j
		if p.Resize != nil {
			switch {
			case !j.Elastic():
				v.fail("resize %s: job is not elastic", p.JobID)
			case p.Mode != SuspendBoundary:
				v.fail("resize %s: mode %q, a resize checkpoints at the boundary", p.JobID, p.Mode)
			}
			v.placement("resize", j, p.Resize)
			v.added = append(v.added, Added(j.Placement, p.Resize)...)
			c := *j
			c.Suspend = &SuspendState{Mode: p.Mode, For: p.For, Resize: p.Resize}
			victim = &c
		}
		if p.For != "" {
			if q := v.ix.Job(p.For); q == nil || q.Phase != Queued {
				v.fail("preemption %s: for %s, which is not a queued job", p.JobID, p.For)
			}
			v.freeing[p.For] = append(v.freeing[p.For], victim)
		}
	}
}

// reservations: each names a queued job once that is not also started, at a valid placement.
func (v *validator) reservations(reservations []Reservation) {
	for _, r := range reservations {
		j := v.ix.Job(r.JobID)
		switch {
		case j == nil:
			v.fail("reservation %s: unknown job", r.JobID)
			continue
		case v.reserved[r.JobID] != nil:
			v.fail("reservation %s: reserved twice", r.JobID)
			continue
		case j.Phase != Queued:
			v.fail("reservation %s: job is %s, not Queued", r.JobID, j.Phase)
		case v.started[r.JobID]:
			v.fail("reservation %s: job is also started", r.JobID)
		}
		v.reserved[r.JobID] = r.Placement
		v.placement("reservation", j, r.Placement)
	}
}

// nodeAccounting: no node holds more GPUs after the decisions than it has, unless it did
// before and the decisions add nothing to it.
func (v *validator) nodeAccounting(starts []Start) {
	s := v.s
	before := make(map[string]int32, len(s.Nodes))
	after := make(map[string]int32, len(s.Nodes))
	for i := range s.Nodes {
		before[s.Nodes[i].Name] = s.Nodes[i].Used
		after[s.Nodes[i].Name] = s.Nodes[i].Used
	}
	for _, st := range starts {
		for _, sl := range st.Placement {
			after[sl.Node] += sl.GPUs
		}
	}
	for _, sl := range v.added {
		after[sl.Node] += sl.GPUs
	}
	for _, q := range v.ix.Queued {
		for _, sl := range v.ix.Hold(q) {
			before[sl.Node] += sl.GPUs
		}
		if v.started[q.ID] {
			continue
		}
		r, ok := v.reserved[q.ID]
		if !ok {
			r = q.Reserved
		}
		fr := append(append([]*Job(nil), v.ix.FreeingFor(q.ID)...), v.freeing[q.ID]...)
		for _, sl := range HoldOf(r, fr) {
			after[sl.Node] += sl.GPUs
		}
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if a := after[n.Name]; a > n.GPUs && a > before[n.Name] {
			v.fail("node %s over-committed: %d GPUs promised (used %d, starts, grows and reservations %d), has %d",
				n.Name, a, n.Used, a-n.Used, n.GPUs)
		}
	}
}
