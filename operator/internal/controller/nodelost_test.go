package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dto "github.com/prometheus/client_model/go"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/scheduler"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"
)

// TestLostNodeRequeuesTheJob: a node deleted, or NotReady for longer than nodeLostTimeout,
// under a running job sends the job back to the queue at once (no acknowledgement to wait
// for), to resume from the epoch its pods last reported complete; once its pods are gone it
// starts again on a node that is not lost.
func TestLostNodeRequeuesTheJob(t *testing.T) {
	for name, lose := range map[string]func(h *harness, node string){
		"node deleted": func(h *harness, node string) {
			if err := h.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
				t.Fatal(err)
			}
		},
		"node NotReady past the timeout": func(h *harness, node string) {
			setReady(t, h, node, corev1.ConditionUnknown)
			h.cycle()
			if a := h.alloc("job"); a.Status.Phase != v1alpha1.AllocationAdmitted {
				t.Fatalf("requeued at once for a NotReady node: %s, want Admitted until nodeLostTimeout", a.Status.Phase)
			}
			h.clock.Step(h.conf.NodeLostTimeout.Duration + time.Second)
		},
	} {
		t.Run(name, func(t *testing.T) {
			job := utiltesting.MakePyTorchJob("job", "ns").Master(8).Obj()
			h := newHarness(t, "fifo", gpuNode("a", 8), job)
			setReady(t, h, "a", corev1.ConditionTrue)
			h.reconcileJob("job")
			h.cycle()
			a := h.wantPhase("job", v1alpha1.AllocationAdmitted)
			node := a.Status.Placement[0].Node
			pods := h.createPods("job")
			// The pod completed 7 epochs, checkpointed at each end.
			for _, p := range pods {
				prog, _ := json.Marshal(agentv1alpha1.Progress{Epoch: 8, EpochsDone: 7, EpochSeconds: 60})
				p.Annotations[agentv1alpha1.AnnotationProgress] = string(prog)
				if err := h.c.Update(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.c.Create(context.Background(), gpuNode("b", 8)); err != nil {
				t.Fatal(err)
			}
			setReady(t, h, "b", corev1.ConditionTrue)

			lose(h, node)
			h.cycle()
			a = h.wantPhase("job", v1alpha1.AllocationSuspended)
			if a.Status.Preemptions != 1 || condReason(a, v1alpha1.ConditionSuspended) != "DeadlineExceeded" || a.Status.ResumeEpoch != 7 {
				t.Fatalf("preemptions %d, suspended %q, resume epoch %d; want 1, DeadlineExceeded, 7", a.Status.Preemptions, condReason(a, v1alpha1.ConditionSuspended), a.Status.ResumeEpoch)
			}
			if !(*pytorchjob.Job)(h.job("job")).IsSuspended() {
				t.Fatal("the job on the lost node is not suspended")
			}
			var m dto.Metric
			if err := h.m.Preemptions.WithLabelValues(string(v1alpha1.SuspendNow), scheduler.ReasonNodeLost).Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
				t.Fatalf("NodeLost preemptions counted: %v (%v), want 1", m.GetCounter().GetValue(), err)
			}

			// The pods go (the pod garbage collector removes those of a deleted node).
			for _, p := range pods {
				if err := h.c.Delete(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			}
			h.handshake("job")
			h.wantPhase("job", v1alpha1.AllocationQueued)
			h.cycle()
			a = h.wantPhase("job", v1alpha1.AllocationAdmitted)
			if got := allocation.GPUsByNode(a.Status.Placement); got["b"] != 8 || len(got) != 1 {
				t.Fatalf("placement %v, want all 8 GPUs on b", a.Status.Placement)
			}
			if a.Status.ResumeEpoch != 7 {
				t.Fatalf("resumes from epoch %d, want 7", a.Status.ResumeEpoch)
			}
		})
	}
}

func setReady(t *testing.T, h *harness, node string, status corev1.ConditionStatus) {
	t.Helper()
	n := &corev1.Node{}
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(h.clock.Now())}}
	if err := h.c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}
