//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/rayjob"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// fakeKubeRay stands in for KubeRay's RayJob and RayCluster controllers in namespace ns: for
// every RayJob that is not suspended and has not finished it creates the head and the worker
// pods (KubeRay's labels, no index: names end in a counter), and on suspend it deletes them
// all, as KubeRay deletes the RayCluster.
func fakeKubeRay(t *testing.T, ns string) {
	fakeKubelet(t, ns)
	everyTick(t, func(ctx context.Context) {
		var jobs rayv1.RayJobList
		if err := k8s.List(ctx, &jobs, client.InNamespace(ns)); err == nil {
			for i := range jobs.Items {
				syncRayPods(ctx, &jobs.Items[i])
			}
		}
	})
}

func syncRayPods(ctx context.Context, job *rayv1.RayJob) {
	g := (*rayjob.Job)(job)
	cluster := client.MatchingLabels{"ray.io/cluster": job.Name + "-raycluster"}
	if fin, _ := g.Finished(); fin || g.IsSuspended() {
		_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(job.Namespace), cluster, client.GracePeriodSeconds(0))
		return
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(job.Namespace), cluster); err != nil || len(pods.Items) > 0 {
		return
	}
	// A generation counter in the names: KubeRay names pods with random suffixes.
	gen := time.Now().UnixNano() % 1e6
	create := func(p *corev1.Pod) {
		if err := k8s.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return
		}
	}
	create(utiltesting.MakeRayPod(job, "", fmt.Sprintf("%s-head-%d", job.Name, gen)))
	for _, wg := range job.Spec.RayClusterSpec.WorkerGroupSpecs {
		for i := range ptr.Deref(wg.Replicas, 1) {
			create(utiltesting.MakeRayPod(job, wg.GroupName, fmt.Sprintf("%s-%s-worker-%d-%d", job.Name, wg.GroupName, gen, i)))
		}
	}
}

// rayGPUPods lists the pods of a RayJob that PickyMan places (its GPU groups').
func rayGPUPods(ns, job string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{v1alpha1.LabelAllocation: jobframework.AllocationName("RayJob", job)})
	return list.Items, err
}

// rayPodsOnNodes checks that the job's GPU pods are all bound, n of them, one per node.
func rayPodsOnNodes(ns, job string, n int) error {
	pods, err := rayGPUPods(ns, job)
	if err != nil {
		return err
	}
	nodes := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			return fmt.Errorf("pod %s not bound", p.Name)
		}
		nodes[p.Spec.NodeName]++
	}
	if len(nodes) != n {
		return fmt.Errorf("GPU pods of %s on nodes %v, want %d nodes with one each", job, nodes, n)
	}
	for node, c := range nodes {
		if c != 1 {
			return fmt.Errorf("%d pods of %s on %s, want one per node", c, job, node)
		}
	}
	return nil
}

// A RayJob goes through the same adapter as a PyTorchJob: the webhook suspends it and makes
// its GPU groups' templates PickyMan's (the CPU head's stays the cluster's), it is admitted as
// one gang, its index-less worker pods are bound one per placed node, a high-priority
// PyTorchJob preempts it through the checkpoint handshake (KubeRay deletes the cluster on
// suspend), and it resumes from the acknowledged epoch when the GPUs are free again.
func TestRayJobAdmissionPreemptionResume(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "ray-a", "ray-b")
	fakeKubeRay(t, ns)
	fakeTrainingOperator(t, ns)
	startOperator(t, testConfig("kueue"))
	ctx := context.Background()

	low := utiltesting.MakeRayJob("low", ns).Queue("low").WorkerGroup("gpu", 2, 8).Obj()
	if err := k8s.Create(ctx, low); err != nil {
		t.Fatal(err)
	}
	created := &rayv1.RayJob{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(low), created); err != nil {
		t.Fatal(err)
	}
	worker := created.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template
	head := created.Spec.RayClusterSpec.HeadGroupSpec.Template
	if worker.Spec.SchedulerName != v1alpha1.SchedulerName || worker.Labels[v1alpha1.LabelAllocation] != "rayjob-low" {
		t.Errorf("worker template not PickyMan's: scheduler %q labels %v", worker.Spec.SchedulerName, worker.Labels)
	}
	if head.Spec.SchedulerName != "" {
		t.Errorf("the CPU head's template got scheduler %q; it stays the cluster's", head.Spec.SchedulerName)
	}

	a := waitKindPhase(t, "RayJob", ns, "low", v1alpha1.AllocationAdmitted, 20*time.Second)
	if len(a.Spec.PodSets) != 1 || a.Spec.PodSets[0].Name != "gpu" || a.Spec.PodSets[0].Count != 2 {
		t.Errorf("pod sets %+v, want gpu x 2", a.Spec.PodSets)
	}
	eventually(t, 20*time.Second, func() error { return rayPodsOnNodes(ns, "low", 2) })
	eventually(t, 20*time.Second, func() error { return podsStarted(ns, "rayjob-low", 2) })

	high := utiltesting.MakePyTorchJob("high", ns).Queue("high").Master(8).Obj()
	if err := k8s.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	p := waitKindPhase(t, "RayJob", ns, "low", v1alpha1.AllocationPreempting, 20*time.Second)
	id := p.Status.Checkpoint.ID
	var pods []corev1.Pod
	eventually(t, 10*time.Second, func() error {
		var err error
		if pods, err = rayGPUPods(ns, "low"); err != nil {
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
	// The RayJob is not suspended before every GPU pod has checkpointed.
	job := &rayv1.RayJob{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(low), job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.Suspend {
		t.Fatal("RayJob suspended before its pods acknowledged the checkpoint")
	}
	for i := range pods {
		v, _ := json.Marshal(agentv1alpha1.CheckpointAck{RequestID: id, Epoch: 2, Path: "/ckpt/ray", Time: time.Now()})
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointAck: string(v)}}})
		if err := k8s.Patch(ctx, &pods[i], client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	q := waitKindPhase(t, "RayJob", ns, "low", v1alpha1.AllocationQueued, 20*time.Second)
	if q.Status.ResumeEpoch != 2 || q.Status.Preemptions != 1 {
		t.Errorf("resume epoch %d preemptions %d, want 2 and 1", q.Status.ResumeEpoch, q.Status.Preemptions)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(low), job); err != nil || !job.Spec.Suspend {
		t.Fatalf("RayJob not suspended after the handshake (err %v)", err)
	}
	waitPhase(t, ns, "high", v1alpha1.AllocationAdmitted, 20*time.Second)

	finishJob(t, ns, "high")
	waitKindPhase(t, "RayJob", ns, "low", v1alpha1.AllocationAdmitted, 20*time.Second)
	// The job controller resumes the RayJob after the Allocation's admission, in its own
	// reconcile: wait for it.
	eventually(t, 20*time.Second, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(low), job); err != nil {
			return err
		}
		var rp agentv1alpha1.ResumePoint
		raw := job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Annotations[agentv1alpha1.AnnotationResumeFrom]
		if err := json.Unmarshal([]byte(raw), &rp); err != nil || rp.Epoch != 2 || rp.Path != "/ckpt/ray" {
			return fmt.Errorf("resume-from annotation %q, want epoch 2 at /ckpt/ray", raw)
		}
		if job.Spec.Suspend {
			return errors.New("resumed RayJob still suspended")
		}
		return nil
	})
	eventually(t, 20*time.Second, func() error { return rayPodsOnNodes(ns, "low", 2) })
}

// An invalid RayJob is rejected by the webhook with the field and the reason.
func TestRayJobRejected(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "rej-a")
	startOperator(t, testConfig("fifo"))
	for name, tc := range map[string]struct {
		job  *rayv1.RayJob
		want []string
	}{
		"worker group without GPUs": {
			job:  utiltesting.MakeRayJob("nogpu", ns).WorkerGroup("gpu", 1, 8).WorkerGroup("cpu", 1, -1).Obj(),
			want: []string{"spec.rayClusterSpec.workerGroupSpecs[1].template.spec.containers[resources.limits][nvidia.com/gpu]", "GPU limit"},
		},
		"worker fits no node": {
			job:  utiltesting.MakeRayJob("big", ns).WorkerGroup("gpu", 1, 16).Obj(),
			want: []string{"spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[resources.limits][nvidia.com/gpu]", "fits on no node"},
		},
		"unknown queue": {
			job:  utiltesting.MakeRayJob("q", ns).Queue("nope").WorkerGroup("gpu", 1, 8).Obj(),
			want: []string{"metadata.labels[pickyman.dev/queue]", "nope"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := k8s.Create(context.Background(), tc.job)
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
}
