//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	allocutil "github.com/pickyman/pickyman/operator/internal/allocation"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// fakeTrainer stands in for the Trainer's TrainJob controller, JobSet and the Job controller
// in namespace ns (the Trainer needs JobSet, which is not run here): for every TrainJob that
// is not suspended and has not finished it creates the node job's spec.trainer.numNodes pods
// with JobSet's labels and the Job controller's completion index, through the API server and
// so through the operator's pod webhook; on suspend or finish it deletes them, as the
// suspended JobSet's Jobs do.
func fakeTrainer(t *testing.T, ns string) {
	fakeKubelet(t, ns)
	everyTick(t, func(ctx context.Context) {
		list := trainjob.Integration.NewList()
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err == nil {
			for i := range list.(*unstructured.UnstructuredList).Items {
				syncTrainPods(ctx, &list.(*unstructured.UnstructuredList).Items[i])
			}
		}
	})
}

func syncTrainPods(ctx context.Context, job *unstructured.Unstructured) {
	g := trainjob.Integration.Wrap(job)
	jobSet := client.MatchingLabels{trainjob.JobSetNameLabel: job.GetName()}
	if fin, _ := g.Finished(); fin || g.IsSuspended() {
		_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(job.GetNamespace()), jobSet, client.GracePeriodSeconds(0))
		return
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(job.GetNamespace()), jobSet); err != nil || len(pods.Items) > 0 {
		return
	}
	n, _, _ := unstructured.NestedInt64(job.Object, "spec", "trainer", "numNodes")
	// A generation counter in the names: the Job controller names pods with random suffixes.
	gen := time.Now().UnixNano() % 1e6
	for i := range int32(n) {
		if err := k8s.Create(ctx, utiltesting.MakeTrainJobPod(job, i, gen)); err != nil && !apierrors.IsAlreadyExists(err) {
			return
		}
	}
}

// trainPods lists the pods of a TrainJob that PickyMan places (they carry its Allocation's
// label, which only the operator's pod webhook gives them).
func trainPods(ns, job string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{v1alpha1.LabelAllocation: jobframework.AllocationName("TrainJob", job)})
	return list.Items, err
}

// trainPodsPinned checks that n pods of a TrainJob are live and each is bound to the node
// its Allocation's placement gives its completion index, one per node, and that they are
// PickyMan's: its scheduler, the agent's socket, and the resume point want (when not "").
func trainPodsPinned(ns, job string, n int, want *agentv1alpha1.ResumePoint) error {
	a, err := kindAllocation("TrainJob", ns, job)
	if err != nil {
		return err
	}
	pods, err := trainPods(ns, job)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		var idx int32
		if _, err := fmt.Sscan(p.Labels["batch.kubernetes.io/job-completion-index"], &idx); err != nil {
			return fmt.Errorf("pod %s: completion index %q: %w", p.Name, p.Labels["batch.kubernetes.io/job-completion-index"], err)
		}
		node, _ := allocutil.NodeFor(a.Status.Placement, trainjob.TrainJobNodePodSet, idx)
		switch {
		case p.Spec.NodeName == "" || p.Spec.NodeName != node:
			return fmt.Errorf("pod %s (index %d) on %q, want %q", p.Name, idx, p.Spec.NodeName, node)
		case seen[node]:
			return fmt.Errorf("two pods of %s on %s", job, node)
		case p.Spec.SchedulerName != v1alpha1.SchedulerName:
			return fmt.Errorf("pod %s has scheduler %q", p.Name, p.Spec.SchedulerName)
		case !hasEnv(&p, agentv1alpha1.EnvSocket):
			return fmt.Errorf("pod %s lacks %s", p.Name, agentv1alpha1.EnvSocket)
		}
		seen[node] = true
		if want != nil {
			var rp agentv1alpha1.ResumePoint
			if err := json.Unmarshal([]byte(p.Annotations[agentv1alpha1.AnnotationResumeFrom]), &rp); err != nil || rp != *want {
				return fmt.Errorf("pod %s resumes from %q, want %+v", p.Name, p.Annotations[agentv1alpha1.AnnotationResumeFrom], *want)
			}
		}
	}
	if len(seen) != n {
		return fmt.Errorf("%d pods of %s bound, want %d", len(seen), job, n)
	}
	return nil
}

func getTrainJob(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := trainjob.Integration.NewObject().(*unstructured.Unstructured)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// A TrainJob goes through the same adapter as the other kinds, against the Trainer v2.0 CRD:
// the webhook creates it suspended, it is admitted as one gang of numNodes pods, the
// operator's pod webhook makes its node pods PickyMan's and the binder pins each to the node
// of its completion index, a high-priority PyTorchJob preempts it through the checkpoint
// handshake (spec.suspend only after the acknowledgements), it resumes from the acknowledged
// epoch, and its Allocation finishes when the TrainJob is Complete.
func TestTrainJobAdmissionPreemptionResume(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "tj-a", "tj-b")
	fakeTrainer(t, ns)
	fakeTrainingOperator(t, ns)
	startOperator(t, testConfig("kueue"))
	ctx := context.Background()

	low := utiltesting.MakeTrainJob("low", ns).Queue("low").Nodes(2).GPUs(8).GPUProduct("nvidia.com/gpu.product", "A100").Obj()
	if err := k8s.Create(ctx, low); err != nil {
		t.Fatal(err)
	}
	if got := getTrainJob(t, ns, "low"); !trainjob.Integration.Wrap(got).IsSuspended() {
		t.Error("the webhook did not create the TrainJob suspended")
	}

	a := waitKindPhase(t, "TrainJob", ns, "low", v1alpha1.AllocationAdmitted, 20*time.Second)
	want := []v1alpha1.PodSet{{Name: "node", Count: 2, GPUsPerPod: 8, GPUModel: "A100"}}
	if fmt.Sprint(a.Spec.PodSets) != fmt.Sprint(want) {
		t.Errorf("pod sets %+v, want %+v", a.Spec.PodSets, want)
	}
	if got := len(allocutil.GPUsByNode(a.Status.Placement)); got != 2 {
		t.Errorf("placement %v spans %d nodes, want 2", a.Status.Placement, got)
	}
	eventually(t, 20*time.Second, func() error { return trainPodsPinned(ns, "low", 2, &agentv1alpha1.ResumePoint{}) })
	// The operator's writes kept the fields the adapter does not model.
	job := getTrainJob(t, ns, "low")
	if trainjob.Integration.Wrap(job).IsSuspended() {
		t.Error("admitted TrainJob still suspended")
	}
	if img, _, _ := unstructured.NestedString(job.Object, "spec", "trainer", "image"); !strings.HasPrefix(img, "pytorch/pytorch") {
		t.Errorf("spec.trainer.image = %q after the operator's update", img)
	}
	if rt, _, _ := unstructured.NestedString(job.Object, "spec", "runtimeRef", "name"); rt != "torch-distributed" {
		t.Errorf("spec.runtimeRef.name = %q after the operator's update", rt)
	}

	eventually(t, 20*time.Second, func() error { return podsStarted(ns, "trainjob-low", 2) })
	high := utiltesting.MakePyTorchJob("high", ns).Queue("high").Master(8).Obj()
	if err := k8s.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	p := waitKindPhase(t, "TrainJob", ns, "low", v1alpha1.AllocationPreempting, 20*time.Second)
	id := p.Status.Checkpoint.ID
	var pods []corev1.Pod
	eventually(t, 10*time.Second, func() error {
		var err error
		if pods, err = trainPods(ns, "low"); err != nil {
			return err
		}
		for _, pod := range pods {
			var req agentv1alpha1.CheckpointRequest
			if err := json.Unmarshal([]byte(pod.Annotations[agentv1alpha1.AnnotationCheckpointRequest]), &req); err != nil || req.ID != id {
				return fmt.Errorf("pod %s has no request %s", pod.Name, id)
			}
		}
		return nil
	})
	// The TrainJob is not suspended before every node pod has checkpointed.
	if trainjob.Integration.Wrap(getTrainJob(t, ns, "low")).IsSuspended() {
		t.Fatal("TrainJob suspended before its pods acknowledged the checkpoint")
	}
	for i := range pods {
		v, _ := json.Marshal(agentv1alpha1.CheckpointAck{RequestID: id, Epoch: 2, Path: "/ckpt/train", Time: time.Now()})
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointAck: string(v)}}})
		if err := k8s.Patch(ctx, &pods[i], client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	q := waitKindPhase(t, "TrainJob", ns, "low", v1alpha1.AllocationQueued, 20*time.Second)
	if q.Status.ResumeEpoch != 2 || q.Status.Preemptions != 1 {
		t.Errorf("resume epoch %d preemptions %d, want 2 and 1", q.Status.ResumeEpoch, q.Status.Preemptions)
	}
	if !trainjob.Integration.Wrap(getTrainJob(t, ns, "low")).IsSuspended() {
		t.Fatal("TrainJob not suspended after the handshake")
	}
	waitPhase(t, ns, "high", v1alpha1.AllocationAdmitted, 20*time.Second)

	// The new pods start from the acknowledged checkpoint.
	finishJob(t, ns, "high")
	waitKindPhase(t, "TrainJob", ns, "low", v1alpha1.AllocationAdmitted, 20*time.Second)
	eventually(t, 20*time.Second, func() error {
		return trainPodsPinned(ns, "low", 2, &agentv1alpha1.ResumePoint{Epoch: 2, Path: "/ckpt/train"})
	})

	// Complete, as the Trainer reports its JobSet's completion.
	eventually(t, 10*time.Second, func() error {
		job := getTrainJob(t, ns, "low")
		conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "Complete", "status": string(metav1.ConditionTrue), "reason": "JobSetCompleted",
			"message": "jobset completed", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)})
		if err := unstructured.SetNestedSlice(job.Object, conds, "status", "conditions"); err != nil {
			return err
		}
		return k8s.Status().Update(ctx, job)
	})
	f := waitKindPhase(t, "TrainJob", ns, "low", v1alpha1.AllocationFinished, 20*time.Second)
	if condition(f, v1alpha1.ConditionFinished) != "Succeeded" {
		t.Errorf("finished with %q, want Succeeded", condition(f, v1alpha1.ConditionFinished))
	}
}

// An invalid TrainJob is rejected by the webhook with the field and the reason; a TrainJob
// without the queue label is left alone.
func TestTrainJobRejected(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "tjrej-a")
	startOperator(t, testConfig("fifo"))
	ctx := context.Background()
	for name, tc := range map[string]struct {
		job  *unstructured.Unstructured
		want []string
	}{
		"no numNodes, no runtime": {
			job:  utiltesting.MakeTrainJob("nonodes", ns).GPUs(8).Obj(),
			want: []string{"spec.runtimeRef.name", "Not found", "ClusterTrainingRuntime torch-distributed", "spec.trainer.numNodes"},
		},
		"no GPU limit": {
			job:  utiltesting.MakeTrainJob("nogpu", ns).Nodes(2).GPUs(-1).Obj(),
			want: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "GPU limit"},
		},
		"node fits no node": {
			job:  utiltesting.MakeTrainJob("big", ns).Nodes(1).GPUs(16).Obj(),
			want: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "fits on no node"},
		},
		"scheduling gate": {
			job: utiltesting.MakeTrainJob("gated", ns).Nodes(1).GPUs(8).
				Override(map[string]any{"schedulingGates": []any{map[string]any{"name": "wait"}}}, "node").Obj(),
			want: []string{"spec.podSpecOverrides[0].schedulingGates", "cannot be bound"},
		},
		"unknown queue": {
			job:  utiltesting.MakeTrainJob("q", ns).Queue("nope").Nodes(1).GPUs(8).Obj(),
			want: []string{"metadata.labels[pickyman.dev/queue]", "nope"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := k8s.Create(ctx, tc.job)
			if err == nil {
				t.Fatal("created")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	plain := utiltesting.MakeTrainJob("plain", ns).Queue("").Obj()
	if err := k8s.Create(ctx, plain); err != nil {
		t.Fatalf("unmanaged TrainJob rejected: %v", err)
	}
	if trainjob.Integration.Wrap(getTrainJob(t, ns, "plain")).IsSuspended() {
		t.Error("unmanaged TrainJob suspended")
	}
	if _, err := kindAllocation("TrainJob", ns, "plain"); !apierrors.IsNotFound(err) {
		t.Errorf("unmanaged TrainJob has an Allocation (err %v)", err)
	}
}

// A TrainJob that leaves its gang to its runtime is admitted with the runtime's: the operator
// reads the ClusterTrainingRuntime (or the TrainingRuntime of the job's namespace) as the
// Trainer merges it.
func TestTrainJobGangFromRuntime(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "tjrt-a", "tjrt-b")
	startOperator(t, testConfig("fifo"))
	ctx := context.Background()
	cluster := utiltesting.MakeClusterTrainingRuntime("torch-" + ns).NumNodes(2).GPUs(4).Obj()
	team := utiltesting.MakeTrainingRuntime("team", ns).NoMLPolicy().Parallelism(3).GPUs(2).Obj()
	for _, rt := range []*unstructured.Unstructured{cluster, team} {
		if err := k8s.Create(ctx, rt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cluster) })
	for name, want := range map[string]v1alpha1.PodSet{
		"from-cluster-runtime": {Name: "node", Count: 2, GPUsPerPod: 4},
		"from-team-runtime":    {Name: "node", Count: 3, GPUsPerPod: 2},
	} {
		w := utiltesting.MakeTrainJob(name, ns).Runtime("", cluster.GetName())
		if name == "from-team-runtime" {
			w = utiltesting.MakeTrainJob(name, ns).Runtime("TrainingRuntime", "team")
		}
		if err := k8s.Create(ctx, w.Obj()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a := waitKindPhase(t, "TrainJob", ns, name, v1alpha1.AllocationAdmitted, 20*time.Second)
		if fmt.Sprint(a.Spec.PodSets) != fmt.Sprint([]v1alpha1.PodSet{want}) {
			t.Errorf("%s: pod sets %+v, want %+v", name, a.Spec.PodSets, want)
		}
	}
}
