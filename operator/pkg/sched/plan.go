package sched

// Plan accumulates one cycle's decisions on a View: the decide half of decide-then-act.
// A policy orders the queued jobs its own way, then for each calls Admit and, if it
// preempts, FindVictims and Preempt. Plan keeps the view, the decisions and the set of
// jobs already chosen as victims consistent, so that what it returns passes Validate.
type Plan struct {
	Snapshot *Snapshot
	Index    *Index
	View     *View

	d         Decisions
	preempted map[string]bool
	// started holds the job of each of d.Starts, in the same order.
	started []*Job
}

// NewPlan starts a plan for s.
func NewPlan(s *Snapshot) *Plan { return newPlan(s, NewIndex(s)) }

func newPlan(s *Snapshot, ix *Index) *Plan {
	return &Plan{Snapshot: s, Index: ix, View: NewView(s, ix), preempted: make(map[string]bool)}
}

// Admission is what Admit did with a queued job.
type Admission int

const (
	// Started: the job starts now (on its reservation, or on free GPUs).
	Started Admission = iota
	// Waiting: the job has a reservation, or jobs are being suspended for it, and the GPUs
	// are not all free yet; it must not get more victims and keeps its GPUs held.
	Waiting
	// NoRoom: the job does not fit in the free GPUs now.
	NoRoom
	// Never: the job does not fit the cluster even when it is empty; skip it.
	Never
)

// Admit tries to start the queued job j:
//
//   - with a usable reservation (View.ValidReservation) it starts there once all those GPUs
//     are free, and waits otherwise;
//   - with jobs still suspending for it (and no reservation) it waits for them;
//   - otherwise it is placed on free GPUs with PlaceGang (an unusable reservation's held
//     GPUs count as free for j itself).
func (p *Plan) Admit(j *Job) Admission {
	v := p.View
	if len(j.Reserved) > 0 && v.ValidReservation(j) {
		if v.StartReserved(j) {
			p.d.Starts = append(p.d.Starts, Start{JobID: j.ID, Placement: cloneSlots(j.Reserved)})
			p.started = append(p.started, j)
			return Started
		}
		return Waiting
	}
	if len(p.Index.FreeingFor(j.ID)) > 0 {
		return Waiting
	}
	if !v.EverFits(j) {
		return Never
	}
	if !p.startOnFree(j, j) {
		return NoRoom
	}
	return Started
}

// startOnFree starts j where PlaceGang puts gang (j itself, or j at another size) in the
// free GPUs, counting j's own reservation's held GPUs as free; it reports whether it did.
func (p *Plan) startOnFree(j, gang *Job) bool {
	v := p.View
	hold := v.Hold(j.ID)
	v.Give(hold)
	pl, ok := v.PlaceGang(gang)
	if !ok {
		v.Take(hold)
		return false
	}
	delete(v.holds, j.ID)
	v.Take(pl)
	p.d.Starts = append(p.d.Starts, Start{JobID: j.ID, Placement: pl})
	p.started = append(p.started, j)
	return true
}

// StartedJob returns the job of the plan's i-th start (Decisions().Starts[i]).
func (p *Plan) StartedJob(i int) *Job { return p.started[i] }

// Preempted reports whether job id was already chosen as a victim in this plan.
func (p *Plan) Preempted(id string) bool { return p.preempted[id] }

// Preempt records the preemption of victims for queued job q in mode, and a reservation
// of placement for q (found by View.FindVictims on this plan's view), and holds the
// placement's free part in the view.
func (p *Plan) Preempt(q *Job, victims []*Job, placement []Slot, mode SuspendMode, reason string) {
	for _, vj := range victims {
		p.preempted[vj.ID] = true
		p.d.Preemptions = append(p.d.Preemptions, Preemption{JobID: vj.ID, Mode: mode, For: q.ID, Reason: reason})
	}
	p.d.Reservations = append(p.d.Reservations, Reservation{JobID: q.ID, Placement: placement})
	p.View.Reserve(q, placement, victims)
}

// Resize records resizes of elastic running jobs (job ID to the placement it keeps) for
// queued job q, when For is set, with a reservation of placement for q: the GPUs the
// resizes give back and the free ones. The view holds the placement's free part. A grow
// (For empty, no placement) promises the added GPUs at once: the view takes them.
func (p *Plan) Resize(q *Job, resizes []Preemption, placement []Slot) {
	var freed []Slot
	for _, r := range resizes {
		vj := p.Index.Job(r.JobID)
		p.preempted[r.JobID] = true
		r.Mode = SuspendBoundary
		if q != nil {
			r.For = q.ID
		}
		p.d.Preemptions = append(p.d.Preemptions, r)
		if vj != nil {
			freed = append(freed, Freed(vj.Placement, r.Resize)...)
			p.View.Take(Added(vj.Placement, r.Resize))
		}
	}
	if q == nil {
		return
	}
	p.d.Reservations = append(p.d.Reservations, Reservation{JobID: q.ID, Placement: placement})
	p.View.ReserveFreed(q, placement, freed)
}

// AdmitSized is Admit for an elastic queued job at size workers instead of j.Workers: it
// starts j on free GPUs if a gang of that size fits (reservations and pending suspends
// are left to Admit).
func (p *Plan) AdmitSized(j *Job, workers int32) bool {
	c := *j
	c.Workers = workers
	return p.startOnFree(j, &c)
}

// Decisions returns the decisions recorded so far.
func (p *Plan) Decisions() Decisions { return p.d }

func cloneSlots(s []Slot) []Slot { return append([]Slot(nil), s...) }
