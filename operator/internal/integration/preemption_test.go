//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/setup"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
)

// startVictim fills two 8-GPU nodes with a low-priority job, then submits a high-priority
// job that needs one node, so that the kueue policy preempts the low one. It returns the
// victim's Allocation once it is Preempting and its pods carry the checkpoint request.
func startVictim(t *testing.T, ns, node1, node2 string) *v1alpha1.Allocation {
	t.Helper()
	ctx := context.Background()
	makeNodes(t, 8, node1, node2)
	low := utiltesting.MakePyTorchJob("low", ns).Queue("low").Master(8).Workers(1, 8).Obj()
	if err := k8s.Create(ctx, low); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "low", v1alpha1.AllocationAdmitted, 20*time.Second)
	eventually(t, 20*time.Second, func() error { return boundPods(ns, "low", 2) })
	eventually(t, 20*time.Second, func() error { return podsStarted(ns, "pytorchjob-low", 2) })
	high := utiltesting.MakePyTorchJob("high", ns).Queue("high").Master(8).Obj()
	if err := k8s.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	a := waitPhase(t, ns, "low", v1alpha1.AllocationPreempting, 20*time.Second)
	if a.Status.Checkpoint == nil || a.Status.Checkpoint.For != ns+"/pytorchjob-high" {
		t.Fatalf("checkpoint request %+v, want one for %s/pytorchjob-high", a.Status.Checkpoint, ns)
	}
	eventually(t, 10*time.Second, func() error { return requested(ns, "low", a.Status.Checkpoint.ID) })
	return a
}

func boundPods(ns, job string, n int) error {
	pods, err := jobPods(ns, job)
	if err != nil {
		return err
	}
	bound := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	if bound != n {
		return fmt.Errorf("%d of %d pods of %s bound, want %d", bound, len(pods), job, n)
	}
	return nil
}

// requested checks that every pod of a job carries checkpoint request id.
func requested(ns, job, id string) error {
	pods, err := jobPods(ns, job)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no pods")
	}
	for _, p := range pods {
		var req agentv1alpha1.CheckpointRequest
		if err := json.Unmarshal([]byte(p.Annotations[agentv1alpha1.AnnotationCheckpointRequest]), &req); err != nil || req.ID != id {
			return fmt.Errorf("pod %s request %q, want id %s", p.Name, p.Annotations[agentv1alpha1.AnnotationCheckpointRequest], id)
		}
	}
	return nil
}

// ack plays the agent: it acknowledges request id on every pod of a job with epoch.
func ack(t *testing.T, ns, job, id string, epoch int32) {
	t.Helper()
	pods, err := jobPods(ns, job)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		v, _ := json.Marshal(agentv1alpha1.CheckpointAck{RequestID: id, Epoch: epoch, Path: "/ckpt/low", Time: time.Now()})
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointAck: string(v)}}})
		if err := k8s.Patch(context.Background(), &pods[i], client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
}

func condition(a *v1alpha1.Allocation, typ string) string {
	if c := apimeta.FindStatusCondition(a.Status.Conditions, typ); c != nil {
		return c.Reason
	}
	return ""
}

// The victim checkpoints, every pod acknowledges, the job is suspended, its pods go, the
// Allocation is Queued with the acknowledged epoch, the preemptor starts; when the
// preemptor finishes, the victim resumes with the resume point on its templates.
func TestPreemptionHandshakeWithAck(t *testing.T) {
	ns := newNamespace(t)
	fakeTrainingOperator(t, ns)
	startOperator(t, testConfig("kueue"))
	a := startVictim(t, ns, "hs-a", "hs-b")

	ack(t, ns, "low", a.Status.Checkpoint.ID, 3)
	q := waitPhase(t, ns, "low", v1alpha1.AllocationQueued, 20*time.Second)
	if q.Status.ResumeEpoch != 3 || q.Status.ResumePath != "/ckpt/low" {
		t.Errorf("resume point %d %q, want 3 /ckpt/low", q.Status.ResumeEpoch, q.Status.ResumePath)
	}
	if r := condition(q, v1alpha1.ConditionSuspended); r != "Acknowledged" {
		t.Errorf("Suspended condition reason %q, want Acknowledged", r)
	}
	if q.Status.Preemptions != 1 || len(q.Status.Placement) != 0 {
		t.Errorf("preemptions %d placement %v, want 1 and none", q.Status.Preemptions, q.Status.Placement)
	}
	waitPhase(t, ns, "high", v1alpha1.AllocationAdmitted, 20*time.Second)

	finishJob(t, ns, "high")
	waitPhase(t, ns, "low", v1alpha1.AllocationAdmitted, 20*time.Second)
	job := &kftraining.PyTorchJob{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "low"}, job); err != nil {
		t.Fatal(err)
	}
	var rp agentv1alpha1.ResumePoint
	raw := job.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Template.Annotations[agentv1alpha1.AnnotationResumeFrom]
	if err := json.Unmarshal([]byte(raw), &rp); err != nil || rp.Epoch != 3 {
		t.Errorf("resume-from annotation %q, want epoch 3", raw)
	}
}

// Without acknowledgements, the deadline suspends the job anyway.
func TestPreemptionDeadline(t *testing.T) {
	ns := newNamespace(t)
	fakeTrainingOperator(t, ns)
	conf := testConfig("kueue")
	conf.Checkpoint.NowDeadline.Duration = 4 * time.Second
	startOperator(t, conf)
	startVictim(t, ns, "dl-a", "dl-b")

	q := waitPhase(t, ns, "low", v1alpha1.AllocationQueued, 20*time.Second)
	if r := condition(q, v1alpha1.ConditionSuspended); r != "DeadlineExceeded" {
		t.Errorf("Suspended condition reason %q, want DeadlineExceeded", r)
	}
	waitPhase(t, ns, "high", v1alpha1.AllocationAdmitted, 20*time.Second)
}

// An operator stopped in the middle of a handshake is replaced by a new one: the request id
// on the pods stays the same, the job is not preempted twice, and the handshake completes.
func TestRestartMidHandshake(t *testing.T) {
	ns := newNamespace(t)
	fakeTrainingOperator(t, ns)
	first := startOperator(t, testConfig("kueue"))
	a := startVictim(t, ns, "rs-a", "rs-b")
	id := a.Status.Checkpoint.ID
	first.stop()

	startOperator(t, testConfig("kueue"))
	time.Sleep(2 * time.Second) // cycles of the new operator
	again, err := allocation(ns, "low")
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.Phase != v1alpha1.AllocationPreempting || again.Status.Checkpoint.ID != id || again.Status.Preemptions != 1 {
		t.Fatalf("after restart: phase %s request %v preemptions %d; want Preempting, %s, 1",
			again.Status.Phase, again.Status.Checkpoint, again.Status.Preemptions, id)
	}
	if err := requested(ns, "low", id); err != nil {
		t.Fatalf("request on the pods changed: %v", err)
	}
	ack(t, ns, "low", id, 1)
	q := waitPhase(t, ns, "low", v1alpha1.AllocationQueued, 20*time.Second)
	if q.Status.Preemptions != 1 || q.Status.ResumeEpoch != 1 {
		t.Errorf("preemptions %d resume epoch %d, want 1 and 1", q.Status.Preemptions, q.Status.ResumeEpoch)
	}
	waitPhase(t, ns, "high", v1alpha1.AllocationAdmitted, 20*time.Second)
}

// Many jobs submitted at once never get more GPUs promised on a node than it has, and the
// pods bound to each node never ask for more than it has.
func TestNoOvercommit(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "oc-a", "oc-b")
	fakeTrainingOperator(t, ns)
	conf := testConfig("fifo")
	conf.Policy.FIFO = &configv1.FIFOArgs{Backfill: true}
	startOperator(t, conf)
	ctx := context.Background()
	for i := range 8 {
		j := utiltesting.MakePyTorchJob(fmt.Sprintf("j%d", i), ns).Master(4).Workers(int32(i%2), 4).Obj()
		if err := k8s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if admitted := checkNoOvercommit(t, ns, 8, 8*time.Second); admitted == 0 {
		t.Fatal("no job was admitted")
	}
}

// checkNoOvercommit watches namespace ns for d: no node is ever promised more than gpus
// GPUs by the Allocations, nor asked for more by the pods bound to it. It returns how many
// jobs were admitted at the end.
func checkNoOvercommit(t *testing.T, ns string, gpus int32, d time.Duration) int {
	t.Helper()
	ctx := context.Background()
	stop := time.Now().Add(d)
	admitted := 0
	for time.Now().Before(stop) {
		var list v1alpha1.AllocationList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		used := map[string]int32{}
		admitted = 0
		for _, a := range list.Items {
			switch a.Status.Phase {
			case v1alpha1.AllocationAdmitted, v1alpha1.AllocationPreempting, v1alpha1.AllocationSuspended:
				for _, p := range a.Status.Placement {
					used[p.Node] += p.GPUs
				}
				if a.Status.Phase == v1alpha1.AllocationAdmitted {
					admitted++
				}
			}
		}
		for n, g := range used {
			if g > gpus {
				t.Fatalf("node %s promised %d GPUs of %d", n, g, gpus)
			}
		}
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		onNode := map[string]int64{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				q := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
				onNode[p.Spec.NodeName] += q.Value()
			}
		}
		for n, g := range onNode {
			if g > int64(gpus) {
				t.Fatalf("pods bound to %s ask for %d GPUs of %d", n, g, gpus)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return admitted
}

// TestTwoSchedulersNoOvercommit: two operators run at once without leader election (each
// with its own scheduler, job and handshake controllers) on one 8-GPU node; four 4-GPU jobs,
// then two high-priority ones that preempt. The scheduler fence keeps them from promising the
// same GPUs: no node is ever promised more than it has (TestFenceTwoSchedulers shows the
// interleaving that over-commits without it).
func TestTwoSchedulersNoOvercommit(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "fence-a")
	fakeTrainingOperator(t, ns)
	conf := func() *configv1.Configuration {
		c := testConfig("kueue")
		// No agent acknowledges here: victims go at the deadline.
		c.Checkpoint.NowDeadline = metav1.Duration{Duration: 2 * time.Second}
		c.Checkpoint.BoundaryDeadline = metav1.Duration{Duration: 2 * time.Second}
		return c
	}
	startOperator(t, conf())
	second, err := setup.New(env.Config, conf(), setup.Options{DisableMetricsServer: true, SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- second.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("second operator: %v", err)
		}
	})
	for i := range 4 {
		if err := k8s.Create(ctx, utiltesting.MakePyTorchJob(fmt.Sprintf("j%d", i), ns).Master(4).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		time.Sleep(2 * time.Second)
		for i := range 2 {
			if err := k8s.Create(ctx, utiltesting.MakePyTorchJob(fmt.Sprintf("h%d", i), ns).Queue("high").Master(4).Obj()); err != nil {
				t.Error(err)
			}
		}
	}()
	checkNoOvercommit(t, ns, 8, 12*time.Second)
	for _, h := range []string{"h0", "h1"} {
		waitPhase(t, ns, h, v1alpha1.AllocationAdmitted, 20*time.Second)
	}
}
