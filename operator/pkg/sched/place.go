package sched

import "fmt"

// PlaceGang finds a gang placement for all of j's workers at once in the view's free GPUs,
// or reports false. It does not change the view.
//
// Each worker lies wholly on one node; nodes must be schedulable and of j's GPU model (a
// job with no GPU model runs on nodes of a single model, the one that gives the best
// placement, so that its workers progress at the same rate). Among the feasible
// placements it prefers, in order:
//
//  1. one node: the node whose free GPUs are closest above the demand (best fit);
//  2. otherwise the fewest nodes: it takes the nodes that hold the most workers first,
//     among equal ones those with the fewest GPUs left over, and fills the last part with
//     the node that fits the remaining workers most tightly.
//
// Remaining ties go to the node listed first in the snapshot. Because nodes are bucketed
// by free count, the cost is O(distinct free counts + workers) per GPU model.
func (v *View) PlaceGang(j *Job) ([]Slot, bool) {
	if j.Workers <= 0 || j.GPUsPerWorker <= 0 {
		return nil, false
	}
	if j.GPUModel != "" {
		gi, ok := v.groupOf[j.GPUModel]
		if !ok {
			return nil, false
		}
		return v.placeIn(v.groups[gi], j.Workers, j.GPUsPerWorker)
	}
	var best []Slot
	var bestLeft int64
	for _, g := range v.groups {
		p, ok := v.placeIn(g, j.Workers, j.GPUsPerWorker)
		if !ok {
			continue
		}
		var left int64
		for _, sl := range p {
			left += int64(v.Free(sl.Node) - sl.GPUs)
		}
		if best == nil || len(p) < len(best) || (len(p) == len(best) && left < bestLeft) {
			best, bestLeft = p, left
		}
	}
	return best, best != nil
}

func (v *View) placeIn(g *modelGroup, workers, per int32) ([]Slot, bool) {
	need := workers * per
	if per > g.maxGPUs || g.free < int64(need) {
		return nil, false
	}
	// 1. A single node, best fit.
	if need <= g.maxGPUs {
		for f := need; f <= g.maxGPUs; f++ {
			if g.count[f] > 0 {
				i := g.nodes[g.buckets[f].next(0)]
				return []Slot{{Node: v.nodes[i].name, Workers: workers, GPUs: need}}, true
			}
		}
	}
	if workers == 1 {
		return nil, false
	}
	// 2. Fewest nodes: largest worker capacity first, best-fit tail.
	var slots []Slot
	var chosen []int32 // local positions
	isChosen := func(l int32) bool {
		for _, c := range chosen {
			if c == l {
				return true
			}
		}
		return false
	}
	remaining := workers
	for c := g.maxGPUs / per; c >= 1 && remaining > 0; c-- {
		hi := (c+1)*per - 1
		if hi > g.maxGPUs {
			hi = g.maxGPUs
		}
		for f := c * per; f <= hi && remaining > 0; f++ {
			if g.count[f] == 0 {
				continue
			}
			for l := g.buckets[f].next(0); l >= 0 && remaining > 0; l = g.buckets[f].next(l + 1) {
				if remaining > c {
					chosen = append(chosen, l)
					slots = append(slots, Slot{Node: v.nodes[g.nodes[l]].name, Workers: c, GPUs: c * per})
					remaining -= c
					continue
				}
				// The rest fits on one node: take the tightest one not chosen yet.
				tail := v.tightest(g, remaining*per, isChosen)
				slots = append(slots, Slot{Node: v.nodes[g.nodes[tail]].name, Workers: remaining, GPUs: remaining * per})
				remaining = 0
			}
		}
	}
	if remaining > 0 {
		return nil, false
	}
	return slots, true
}

// tightest returns the local position of the unchosen node with the fewest free GPUs >= need.
func (v *View) tightest(g *modelGroup, need int32, skip func(int32) bool) int32 {
	for f := need; f <= g.maxGPUs; f++ {
		if g.count[f] == 0 {
			continue
		}
		for l := g.buckets[f].next(0); l >= 0; l = g.buckets[f].next(l + 1) {
			if !skip(l) {
				return l
			}
		}
	}
	return -1 // unreachable: the caller's current node qualifies
}

// EverFits reports whether j could be placed on the schedulable nodes of the cluster if
// they were all empty. A job that never fits must be skipped (the simulator rejects such
// jobs up front); it must not block the queue.
func (v *View) EverFits(j *Job) bool {
	if j.Workers <= 0 || j.GPUsPerWorker <= 0 {
		return false
	}
	for _, g := range v.groups {
		if j.GPUModel != "" && g.model != j.GPUModel {
			continue
		}
		var workers int64
		for size := j.GPUsPerWorker; size <= g.maxGPUs; size++ {
			workers += int64(g.sizes[size]) * int64(size/j.GPUsPerWorker)
		}
		if workers >= int64(j.Workers) {
			return true
		}
	}
	return false
}

// capacity returns how many workers of per GPUs the group's free GPUs hold.
func (g *modelGroup) capacity(per int32) int64 {
	var w int64
	for f := per; f <= g.maxGPUs; f++ {
		w += int64(g.count[f]) * int64(f/per)
	}
	return w
}

// FindVictims chooses, from candidates in the order given (the victim the policy prefers
// first), a minimal set of running jobs whose GPUs, together with the view's free GPUs,
// make a gang placement for the queued job q feasible; it returns the victims (in
// candidate order) and that placement. It does not change the view.
//
// It frees candidates one by one until q fits, then drops, from the second-to-last chosen
// back to the first, every victim without which q still fits (the last one chosen is
// needed by construction). Because feasibility only grows with freed GPUs, no single
// victim of the result can be spared. Feasibility is tracked incrementally as worker
// capacity per GPU model, so the search costs O(candidates scanned) plus one placement.
// Candidates that are not Running are skipped. With no victims needed it returns an
// empty set and a placement on free GPUs.
func (v *View) FindVictims(q *Job, candidates []*Job) ([]*Job, []Slot, bool) {
	return v.findVictims(q, candidates, nil)
}

// findVictims is FindVictims that also skips candidates[i] when skip[i] is set (skip may
// be shorter than candidates or nil).
func (v *View) findVictims(q *Job, candidates []*Job, skip []bool) ([]*Job, []Slot, bool) {
	if q.Workers <= 0 || q.GPUsPerWorker <= 0 {
		return nil, nil, false
	}
	per := q.GPUsPerWorker
	// Worker capacity of each eligible model group.
	caps := make([]int64, len(v.groups))
	for gi, g := range v.groups {
		if q.GPUModel == "" || g.model == q.GPUModel {
			caps[gi] = g.capacity(per)
		} else {
			caps[gi] = -1
		}
	}
	feasible := func() bool {
		for _, c := range caps {
			if c >= int64(q.Workers) {
				return true
			}
		}
		return false
	}
	// Node indices of the chosen victims' slots, looked up once: flat[at[k]:at[k+1]].
	var flat []int32
	at := []int{0}
	// shift changes free GPUs on the k-th chosen victim's nodes by sign and keeps caps
	// current.
	var chosen []*Job
	shift := func(k int, sign int32) {
		for si, i := range flat[at[k]:at[k+1]] {
			if i < 0 {
				continue
			}
			g := chosen[k].Placement[si].GPUs
			n := &v.nodes[i]
			if !n.sched || caps[n.group] < 0 {
				v.add(i, sign*g)
				continue
			}
			mx := v.groups[n.group].maxGPUs
			before := max(clampFree(n, mx), 0)
			v.add(i, sign*g)
			after := max(clampFree(n, mx), 0)
			caps[n.group] += int64(after/per) - int64(before/per)
		}
	}
	ok := feasible()
	for ci, c := range candidates {
		if ok {
			break
		}
		if c.Phase != Running || (ci < len(skip) && skip[ci]) {
			continue
		}
		for _, sl := range c.Placement {
			i, known := v.byName[sl.Node]
			if !known {
				i = -1
			}
			flat = append(flat, i)
		}
		at = append(at, len(flat))
		chosen = append(chosen, c)
		shift(len(chosen)-1, +1)
		ok = feasible()
	}
	if !ok {
		for k := range chosen {
			shift(k, -1)
		}
		return nil, nil, false
	}
	// Drop victims that are not needed, last-but-one first.
	keep := make([]bool, len(chosen))
	for i := range keep {
		keep[i] = true
	}
	for i := len(chosen) - 2; i >= 0; i-- {
		shift(i, -1)
		if feasible() {
			keep[i] = false
		} else {
			shift(i, +1)
		}
	}
	victims := make([]*Job, 0, len(chosen))
	for i, c := range chosen {
		if keep[i] {
			victims = append(victims, c)
		}
	}
	placement, placed := v.PlaceGang(q)
	for i := range chosen {
		if keep[i] {
			shift(i, -1)
		}
	}
	if !placed {
		// Unreachable: worker capacity is exactly what PlaceGang needs.
		return nil, nil, false
	}
	return victims, placement, true
}

// CheckShape reports whether placement matches j's gang shape: every slot holds at least
// one worker and exactly Workers x GPUsPerWorker GPUs for them, no node appears twice, and
// the workers add up to j.Workers (for an elastic job: to a size in Job.Sizes).
func CheckShape(j *Job, placement []Slot) error {
	var workers int32
	seen := make(map[string]bool, len(placement))
	for _, sl := range placement {
		if sl.Workers <= 0 {
			return fmt.Errorf("slot on %q has %d workers", sl.Node, sl.Workers)
		}
		if sl.GPUs != sl.Workers*j.GPUsPerWorker {
			return fmt.Errorf("slot on %q has %d GPUs for %d workers of %d GPUs", sl.Node, sl.GPUs, sl.Workers, j.GPUsPerWorker)
		}
		if seen[sl.Node] {
			return fmt.Errorf("node %q appears twice", sl.Node)
		}
		seen[sl.Node] = true
		workers += sl.Workers
	}
	if lo, hi := j.Sizes(); workers < lo || workers > hi {
		if lo == hi {
			return fmt.Errorf("placement has %d workers, job has %d", workers, j.Workers)
		}
		return fmt.Errorf("placement has %d workers, elastic job runs on %d to %d", workers, lo, hi)
	}
	return nil
}
