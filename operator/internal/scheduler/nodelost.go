package scheduler

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// ReasonNodeLost is the reason of the preemption that sends a job on a lost node back to
// the queue.
const ReasonNodeLost = "NodeLost"

// onLostNode returns, in a stable order, the Admitted Allocations placed on a node that is
// lost at now: deleted (not in nodes), or not Ready for longer than timeout.
func onLostNode(allocs map[string]*v1alpha1.Allocation, nodes []*corev1.Node, now time.Time, timeout time.Duration) []*v1alpha1.Allocation {
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	lost := func(as v1alpha1.NodeAssignment) bool {
		n, ok := byName[as.Node]
		return !ok || notReadySince(n, now, timeout)
	}
	var out []*v1alpha1.Allocation
	for _, a := range allocs {
		if a.Status.Phase == v1alpha1.AllocationAdmitted && slices.ContainsFunc(a.Status.Placement, lost) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.Allocation) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// notReadySince reports whether node n's Ready condition has been other than True for
// longer than timeout at now. A node without a Ready condition has not reported yet.
func notReadySince(n *corev1.Node, now time.Time, timeout time.Duration) bool {
	c := jobframework.ReadyCondition(n)
	return c != nil && c.Status != corev1.ConditionTrue && now.Sub(c.LastTransitionTime.Time) > timeout
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
		p := sched.Preemption{JobID: allocation.JobID(a), Mode: sched.SuspendNow, Reason: ReasonNodeLost}
		if err := s.requestCheckpoint(ctx, a, p, v1alpha1.SuspendNow, 0); err != nil {
			return n, err
		}
		log.FromContext(ctx).Info("node lost under a running job: requeued", "allocation", allocation.JobID(a), "placement", allocation.PlacementString(a.Status.Placement))
		n++
	}
	return n, nil
}
