package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// resizePolicy starts what fits (reservations first) and resizes the job el: shrinks it to
// 2 workers on node a for a job that waits, grows it back to 4 when nobody waits.
type resizePolicy struct{}

func (resizePolicy) Name() string { return "test-resize" }

func (resizePolicy) Schedule(s *sched.Snapshot) sched.Decisions {
	plan := sched.NewPlan(s)
	plan.AdmitReserved()
	var el *sched.Job
	for _, j := range plan.Index.Running {
		if j.ID == "ns/pytorchjob-el" {
			el = j
		}
	}
	waiting := false
	for _, q := range plan.Index.Queued {
		if plan.Pending(q) || plan.Admit(q) != sched.NoRoom {
			continue
		}
		waiting = true
		if el != nil && el.Workers == 4 && !plan.Preempted(el.ID) {
			keep := []sched.Slot{{Node: "a", Workers: 2, GPUs: 4}}
			plan.Resize(q, []sched.Preemption{{JobID: el.ID, Reason: "Shrink", Resize: keep}}, []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}})
		}
	}
	if !waiting && el != nil && el.Workers == 2 && !plan.Preempted(el.ID) {
		plan.Resize(nil, []sched.Preemption{{JobID: el.ID, Reason: "Grow", Resize: []sched.Slot{{Node: "a", Workers: 4, GPUs: 8}}}}, nil)
	}
	return plan.Decisions()
}

// ackAndDelete acknowledges the checkpoint request on every pod at epoch, then deletes them.
func (h *harness) ackAndDelete(job string, pods []*corev1.Pod, epoch int32) {
	h.t.Helper()
	ctx := context.Background()
	id := h.alloc(job).Status.Checkpoint.ID
	for _, p := range pods {
		cur := &corev1.Pod{}
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			h.t.Fatal(err)
		}
		ack, _ := json.Marshal(agentv1alpha1.CheckpointAck{RequestID: id, Epoch: epoch, Path: "/ckpt"})
		cur.Annotations[agentv1alpha1.AnnotationCheckpointAck] = string(ack)
		if err := h.c.Update(ctx, cur); err != nil {
			h.t.Fatal(err)
		}
	}
	h.handshake(job)
	h.wantPhase(job, v1alpha1.AllocationSuspended)
	for _, p := range pods {
		if err := h.c.Delete(ctx, p); err != nil {
			h.t.Fatal(err)
		}
	}
	h.handshake(job)
}

// checkNode fails if the Allocations promise more GPUs on node a than its 8.
func (h *harness) checkNode() {
	h.t.Helper()
	var list v1alpha1.AllocationList
	if err := h.c.List(context.Background(), &list); err != nil {
		h.t.Fatal(err)
	}
	var used int32
	for i := range list.Items {
		if allocation.HoldsGPUs(&list.Items[i]) {
			used += allocation.GPUsByNode(list.Items[i].Status.Placement)["a"]
		}
	}
	if used > 8 {
		h.t.Fatalf("node a: %d GPUs promised, has 8", used)
	}
}

func workerReplicas(j *kftraining.PyTorchJob) int32 {
	return *j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Replicas
}

// An elastic PyTorchJob is shrunk for a waiting job (checkpoint at the boundary, suspend,
// restart on half its workers from the checkpointed epoch) and grown back when nobody
// waits; the Allocation, the job's replicas and the resume point follow, the resizes are
// not preemptions, and node a is never promised more than its GPUs.
func TestResizeFlow(t *testing.T) {
	ctx := context.Background()
	el := utiltesting.MakePyTorchJob("el", "ns").NoMaster().Workers(4, 2).Elastic(2, 4).Obj()
	h := newHarness(t, "fifo", gpuNode("a", 8), el)
	h.setPolicy(resizePolicy{}, nil)

	h.reconcileJob("el")
	a := h.alloc("el")
	if e := a.Spec.Elastic; e == nil || e.PodSet != "Worker" || e.MinCount != 2 || e.MaxCount != 4 {
		t.Fatalf("allocation elastic spec %+v, want Worker 2..4", e)
	}
	h.cycle()
	h.wantPhase("el", v1alpha1.AllocationAdmitted)
	pods := h.createPods("el")

	// A job that waits: el shrinks to 2 workers for it, at the boundary.
	q := utiltesting.MakePyTorchJob("q", "ns").Master(4).Obj()
	if err := h.c.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	h.reconcileJob("q")
	h.cycle()
	a = h.wantPhase("el", v1alpha1.AllocationPreempting)
	if c := a.Status.Checkpoint; c == nil || c.Mode != v1alpha1.SuspendBoundary || sumPods(c.Resize) != 2 {
		t.Fatalf("checkpoint request %+v, want a boundary request to restart on 2 pods", c)
	}
	if a.Status.Resizes != 1 || a.Status.Preemptions != 0 {
		t.Fatalf("resizes %d preemptions %d, want 1 and 0", a.Status.Resizes, a.Status.Preemptions)
	}
	h.checkNode()
	h.ackAndDelete("el", pods, 3)
	a = h.wantPhase("el", v1alpha1.AllocationQueued)
	if sumPods(a.Status.Reserved) != 2 || condReason(a, v1alpha1.ConditionQueued) != "Resized" {
		t.Fatalf("after the checkpoint: reserved %v, queued reason %q; want 2 pods reserved for itself, Resized", a.Status.Reserved, condReason(a, v1alpha1.ConditionQueued))
	}

	// The next cycle restarts el on 2 workers and starts q on the GPUs el gave back.
	h.cycle()
	h.reconcileJob("el") // a reconcile must not undo the new size
	a = h.wantPhase("el", v1alpha1.AllocationAdmitted)
	h.wantPhase("q", v1alpha1.AllocationAdmitted)
	h.checkNode()
	if n := jobframework.PodCount(a.Spec.PodSets); n != 2 || sumPods(a.Status.Placement) != 2 {
		t.Fatalf("el admitted with pod sets %v placement %v, want 2 pods", a.Spec.PodSets, a.Status.Placement)
	}
	j := h.job("el")
	if workerReplicas(j) != 2 || (*pytorchjob.Job)(j).IsSuspended() {
		t.Fatalf("job el: %d Worker replicas, suspended %v; want 2, running", workerReplicas(j), (*pytorchjob.Job)(j).IsSuspended())
	}
	var rp agentv1alpha1.ResumePoint
	tmpl := j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Template
	if err := json.Unmarshal([]byte(tmpl.Annotations[agentv1alpha1.AnnotationResumeFrom]), &rp); err != nil || rp.Epoch != 3 || rp.WorldSize != 2 || rp.ReferenceWorldSize != 4 {
		t.Fatalf("resume point %q, want epoch 3 on 2 of 4 workers", tmpl.Annotations[agentv1alpha1.AnnotationResumeFrom])
	}
	pods = h.createPods("el")
	if len(pods) != 2 {
		t.Fatalf("%d pods at 2 replicas", len(pods))
	}

	// q finishes; nobody waits: el grows back to 4, the added GPUs promised at once.
	qj := h.job("q")
	qj.Status.Conditions = append(qj.Status.Conditions, kftraining.JobCondition{Type: kftraining.JobSucceeded, Status: corev1.ConditionTrue})
	if err := h.c.Status().Update(ctx, qj); err != nil {
		t.Fatal(err)
	}
	h.reconcileJob("q")
	h.wantPhase("q", v1alpha1.AllocationFinished)
	h.cycle()
	a = h.wantPhase("el", v1alpha1.AllocationPreempting)
	if allocation.GPUsByNode(a.Status.Placement)["a"] != 8 || sumPods(a.Status.Checkpoint.Resize) != 4 || a.Status.Resizes != 2 {
		t.Fatalf("growing: placement %v resize %v resizes %d; want 8 GPUs held, 4 pods, 2 resizes", a.Status.Placement, a.Status.Checkpoint.Resize, a.Status.Resizes)
	}
	h.checkNode()
	h.ackAndDelete("el", pods, 5)
	h.cycle()
	a = h.wantPhase("el", v1alpha1.AllocationAdmitted)
	if jobframework.PodCount(a.Spec.PodSets) != 4 || workerReplicas(h.job("el")) != 4 || a.Status.ResumeEpoch != 5 {
		t.Fatalf("grown: pod sets %v replicas %d resume epoch %d; want 4, 4, 5", a.Spec.PodSets, workerReplicas(h.job("el")), a.Status.ResumeEpoch)
	}
	h.checkNode()
}

func sumPods(as []v1alpha1.NodeAssignment) int32 {
	var n int32
	for _, a := range as {
		n += a.Pods
	}
	return n
}

// A change of an elastic job's replicas outside its bounds is rejected by the adapter,
// naming the field.
func TestElasticBoundsRejected(t *testing.T) {
	j := utiltesting.MakePyTorchJob("el", "ns").NoMaster().Workers(5, 2).Elastic(2, 4).Obj()
	h := newHarness(t, "fifo", gpuNode("a", 8), j)
	h.reconcileJob("el")
	var list v1alpha1.AllocationList
	if err := h.c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("an Allocation was created for a job with 5 replicas outside 2..4")
	}
}
