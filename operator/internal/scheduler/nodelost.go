package scheduler

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// ReasonNodeLost is the reason of the preemption that sends a job on a lost node back to
// the queue.
const ReasonNodeLost = "NodeLost"

// lostNodes returns the names, among those an Allocation holds, of the nodes that are lost
// at now: deleted (not in nodes), or not Ready for longer than timeout.
func lostNodes(nodes []corev1.Node, allocs []v1alpha1.Allocation, now time.Time, timeout time.Duration) map[string]bool {
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	lost := map[string]bool{}
	for i := range allocs {
		for _, as := range allocs[i].Status.Placement {
			if _, seen := lost[as.Node]; seen {
				continue
			}
			n, ok := byName[as.Node]
			lost[as.Node] = !ok || notReadySince(n, now, timeout)
		}
	}
	for n, l := range lost {
		if !l {
			delete(lost, n)
		}
	}
	return lost
}

// notReadySince reports whether node n's Ready condition has been other than True for
// longer than timeout at now. A node without a Ready condition has not reported yet.
func notReadySince(n *corev1.Node, now time.Time, timeout time.Duration) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue && now.Sub(c.LastTransitionTime.Time) > timeout
		}
	}
	return false
}

// onLostNode returns the Admitted Allocations placed on a lost node, in a stable order.
func onLostNode(allocs map[string]*v1alpha1.Allocation, lost map[string]bool) []*v1alpha1.Allocation {
	if len(lost) == 0 {
		return nil
	}
	var out []*v1alpha1.Allocation
	for _, a := range allocs {
		if a.Status.Phase != v1alpha1.AllocationAdmitted {
			continue
		}
		if slices.ContainsFunc(a.Status.Placement, func(as v1alpha1.NodeAssignment) bool { return lost[as.Node] }) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.Allocation) int {
		if x := a.Namespace; x != b.Namespace {
			if x < b.Namespace {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// requeueLost sends the jobs that run on a lost node back to the queue: each is preempted
// now, with a deadline already passed, since the pods on the lost node can acknowledge
// nothing and the rest of the gang cannot train without them. The handshake then resumes
// the job from the least epoch its pods reported complete (the agent checkpoints at epoch
// ends), suspends it, and it is queued again once its pods are gone; the next cycles place
// it on nodes that are not lost. It returns how many it sent back.
func (s *Scheduler) requeueLost(ctx context.Context, lost []*v1alpha1.Allocation) (int, error) {
	n := 0
	for _, a := range lost {
		if err := s.preempt(ctx, a, sched.Preemption{JobID: allocation.JobID(a), Mode: sched.SuspendNow, Reason: ReasonNodeLost}); err != nil {
			return n, err
		}
		log.FromContext(ctx).Info("node lost under a running job: requeued", "allocation", allocation.JobID(a), "placement", allocation.PlacementString(a.Status.Placement))
		n++
	}
	return n, nil
}
