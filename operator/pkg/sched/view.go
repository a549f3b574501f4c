package sched

import "sort"

// View is a policy's mutable scratch copy of the free GPUs of a snapshot. On each node,
// free = GPUs - Used - GPUs held by the reservations of queued jobs (see Index.Hold), so a
// placement computed on a fresh View never takes GPUs reserved for another job. A policy
// Takes the placements it decides and Gives back the GPUs of jobs it pretends are gone
// (victim search), so later decisions in the same cycle see the earlier ones.
//
// Nodes are kept in buckets by free count per GPU model, so a gang placement costs about
// O(distinct free counts + workers), independent of the number of nodes. Ties between
// equally good nodes go to the node listed first in Snapshot.Nodes; builders of snapshots
// list nodes by name so that decisions are deterministic.
type View struct {
	nodes   []viewNode
	byName  map[string]int32
	groups  []*modelGroup
	groupOf map[string]int32
	holds   map[string][]Slot
}

type viewNode struct {
	name  string
	group int32
	local int32
	gpus  int32
	// free may be negative when a snapshot promises more than a node has.
	free  int32
	sched bool
}

// modelGroup holds the schedulable nodes of one GPU model, bucketed by free count.
type modelGroup struct {
	model   string
	nodes   []int32 // global node index by local position
	maxGPUs int32
	buckets []bitset // buckets[f]: nodes with exactly f free GPUs, 1 <= f <= maxGPUs
	count   []int32  // count[f]: members of buckets[f]
	free    int64    // free GPUs of the schedulable nodes
	sizes   []int32  // sizes[g]: schedulable nodes with g allocatable GPUs
}

// NewView builds the scratch view of s. ix must index s (NewIndex(s)); pass nil to build
// one.
func NewView(s *Snapshot, ix *Index) *View {
	if ix == nil {
		ix = NewIndex(s)
	}
	v := &View{
		nodes:   make([]viewNode, len(s.Nodes)),
		byName:  make(map[string]int32, len(s.Nodes)),
		groupOf: make(map[string]int32),
	}
	models := make([]string, 0, 2)
	for i := range s.Nodes {
		m := s.Nodes[i].GPUModel
		if _, ok := v.groupOf[m]; !ok {
			v.groupOf[m] = -1
			models = append(models, m)
		}
	}
	sort.Strings(models)
	for gi, m := range models {
		v.groupOf[m] = int32(gi)
		v.groups = append(v.groups, &modelGroup{model: m})
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		g := v.groups[v.groupOf[n.GPUModel]]
		v.nodes[i] = viewNode{name: n.Name, group: v.groupOf[n.GPUModel], local: int32(len(g.nodes)),
			gpus: n.GPUs, free: n.GPUs - n.Used, sched: !n.Unschedulable}
		v.byName[n.Name] = int32(i)
		g.nodes = append(g.nodes, int32(i))
		if n.GPUs > g.maxGPUs {
			g.maxGPUs = n.GPUs
		}
	}
	for _, g := range v.groups {
		g.buckets = make([]bitset, g.maxGPUs+1)
		for f := range g.buckets {
			g.buckets[f] = newBitset(len(g.nodes))
		}
		g.count = make([]int32, g.maxGPUs+1)
		g.sizes = make([]int32, g.maxGPUs+1)
	}
	for i := range v.nodes {
		n := &v.nodes[i]
		if !n.sched {
			continue
		}
		g := v.groups[n.group]
		if n.gpus > 0 {
			g.sizes[n.gpus]++
		}
		v.bucketAdd(g, n)
	}
	for _, q := range ix.reserving {
		if h := ix.Hold(q); len(h) > 0 {
			if v.holds == nil {
				v.holds = make(map[string][]Slot)
			}
			v.holds[q.ID] = h
			v.Take(h)
		}
	}
	return v
}

func clampFree(n *viewNode, max int32) int32 {
	f := n.free
	if f > max {
		f = max
	}
	return f
}

func (v *View) bucketAdd(g *modelGroup, n *viewNode) {
	if f := clampFree(n, g.maxGPUs); f > 0 {
		g.buckets[f].set(n.local)
		g.count[f]++
		g.free += int64(f)
	}
}

func (v *View) bucketRemove(g *modelGroup, n *viewNode) {
	if f := clampFree(n, g.maxGPUs); f > 0 {
		g.buckets[f].clear(n.local)
		g.count[f]--
		g.free -= int64(f)
	}
}

// add changes the free count of node i by delta.
func (v *View) add(i int32, delta int32) {
	n := &v.nodes[i]
	if !n.sched {
		n.free += delta
		return
	}
	g := v.groups[n.group]
	v.bucketRemove(g, n)
	n.free += delta
	v.bucketAdd(g, n)
}

// Take marks the GPUs of a placement as used. Slots on unknown nodes are ignored.
func (v *View) Take(placement []Slot) {
	for _, sl := range placement {
		if i, ok := v.byName[sl.Node]; ok {
			v.add(i, -sl.GPUs)
		}
	}
}

// Give returns the GPUs of a placement to the free pool. Slots on unknown nodes are
// ignored.
func (v *View) Give(placement []Slot) {
	for _, sl := range placement {
		if i, ok := v.byName[sl.Node]; ok {
			v.add(i, sl.GPUs)
		}
	}
}

// Free returns the free GPUs of the named node in the view (0 for unknown nodes; may be
// negative if the snapshot over-promises the node).
func (v *View) Free(node string) int32 {
	if i, ok := v.byName[node]; ok {
		return v.nodes[i].free
	}
	return 0
}

// FreeGPUs returns the free GPUs of the schedulable nodes of a GPU model, or of all models
// when model is "".
func (v *View) FreeGPUs(model string) int64 {
	if model != "" {
		gi, ok := v.groupOf[model]
		if !ok {
			return 0
		}
		return v.groups[gi].free
	}
	var t int64
	for _, g := range v.groups {
		t += g.free
	}
	return t
}

// Hold returns the part of job id's reservation that the view holds out of the free GPUs.
func (v *View) Hold(id string) []Slot { return v.holds[id] }

// Fits reports whether placement fits the view's free GPUs now, on schedulable nodes of
// the job's GPU model.
func (v *View) Fits(j *Job, placement []Slot) bool {
	for _, sl := range placement {
		i, ok := v.byName[sl.Node]
		if !ok {
			return false
		}
		n := &v.nodes[i]
		if !n.sched || n.free < sl.GPUs || (j.GPUModel != "" && v.groups[n.group].model != j.GPUModel) {
			return false
		}
	}
	return true
}

// ValidReservation reports whether j's reservation can still be used: it matches the
// gang shape and lies on existing schedulable nodes of the job's GPU model.
func (v *View) ValidReservation(j *Job) bool {
	if len(j.Reserved) == 0 || CheckShape(j, j.Reserved) != nil {
		return false
	}
	for _, sl := range j.Reserved {
		i, ok := v.byName[sl.Node]
		if !ok {
			return false
		}
		n := &v.nodes[i]
		if !n.sched || (j.GPUModel != "" && v.groups[n.group].model != j.GPUModel) {
			return false
		}
	}
	return true
}

// StartReserved starts queued job j on its reservation if all its GPUs are free now:
// it releases j's hold, checks the reservation fits, and takes it. It reports whether j
// was started; if not, the view is unchanged.
func (v *View) StartReserved(j *Job) bool {
	hold := v.holds[j.ID]
	v.Give(hold)
	if v.Fits(j, j.Reserved) {
		v.Take(j.Reserved)
		delete(v.holds, j.ID)
		return true
	}
	v.Take(hold)
	return false
}

// Reserve holds placement for queued job j whose GPUs are being freed by victims: the
// part of the placement that is free now is taken out of the view (HoldOf), the part the
// victims still hold stays counted as used. It replaces any hold j had.
func (v *View) Reserve(j *Job, placement []Slot, victims []*Job) {
	v.hold(j, HoldOf(placement, victims))
}

// ReserveFreed is Reserve for GPUs being freed given as slots (by resizes).
func (v *View) ReserveFreed(j *Job, placement []Slot, freed []Slot) {
	v.hold(j, HoldOfFreed(placement, freed))
}

func (v *View) hold(j *Job, h []Slot) {
	v.Give(v.holds[j.ID])
	v.Take(h)
	if v.holds == nil {
		v.holds = make(map[string][]Slot)
	}
	v.holds[j.ID] = h
}
