package pickyman

import (
	"cmp"
	"slices"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// hold keeps for q, until the end of this cycle, the free GPUs on the nodes where q is
// nearest to fitting: the q.Workers nodes of q's GPU model with the most free GPUs (at most
// q's GPUs per worker on each; ties by node order). Jobs later in the queue cannot take
// them, so GPUs that running jobs free there accumulate for q instead of being refilled by
// small jobs at once, and a later victim search for q finds fewer victims needed on them
// (Options.HoldAfter). It reports whether it held any GPUs.
func (c *cycle) hold(q *sched.Job) bool {
	per := q.GPUsPerWorker
	if per <= 0 || q.Workers <= 0 {
		return false
	}
	type nodeFree struct {
		i    int
		free int32
	}
	var room []nodeFree
	nodes := c.s.Nodes
	for i := range nodes {
		n := &nodes[i]
		if n.Unschedulable || n.GPUs < per || (q.GPUModel != "" && n.GPUModel != q.GPUModel) {
			continue
		}
		if f := c.plan.View.Free(n.Name); f > 0 {
			room = append(room, nodeFree{i, min(f, per)})
		}
	}
	if len(room) == 0 {
		return false
	}
	slices.SortStableFunc(room, func(a, b nodeFree) int { return cmp.Compare(b.free, a.free) })
	var take []sched.Slot
	for _, r := range room[:min(len(room), int(q.Workers))] {
		take = append(take, sched.Slot{Node: nodes[r.i].Name, GPUs: r.free})
	}
	c.plan.View.Take(take)
	return true
}
