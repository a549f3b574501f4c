package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

const gpuRes corev1.ResourceName = "nvidia.com/gpu"

func gpuNode(name string, gpus int64) corev1.Node {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nvidia.com/gpu.product": "A100"}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{gpuRes: q}, Capacity: corev1.ResourceList{gpuRes: q}},
	}
}

func gpuContainer(name string, gpus int64) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{gpuRes: *resource.NewQuantity(gpus, resource.DecimalSI)}}}
}

// boundPod is a pod on node holding gpus in one container; alloc, if set, is its
// Allocation label.
func boundPod(name, node, alloc string, gpus int64, phase corev1.PodPhase) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{gpuContainer("main", gpus)}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if alloc != "" {
		p.Labels = map[string]string{v1alpha1.LabelAllocation: alloc}
	}
	return p
}

func placedAlloc(name string, phase v1alpha1.AllocationPhase, node string, gpus int32) v1alpha1.Allocation {
	a := v1alpha1.Allocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1alpha1.AllocationSpec{Job: v1alpha1.JobReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: name},
			Queue: "default", PodSets: []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: gpus}}},
	}
	a.Status.Phase = phase
	if node != "" {
		a.Status.Placement = []v1alpha1.NodeAssignment{{PodSet: "Master", Node: node, Pods: 1, GPUs: gpus}}
	}
	return a
}

// TestSnapshotCountsLivePods: a node's used GPUs are what Allocations promise there and what
// live pods hold there, whichever is more, per Allocation, plus every other workload's pods:
// otherwise GPUs held by pods PickyMan does not place are promised twice.
func TestSnapshotCountsLivePods(t *testing.T) {
	view := jobframework.NodeView{GPUResource: gpuRes, GPUProductLabel: "nvidia.com/gpu.product"}
	withInit := boundPod("init-0", "a", "init", 1, corev1.PodRunning)
	withInit.Spec.InitContainers = []corev1.Container{gpuContainer("warm", 3)}
	withSidecar := boundPod("side-0", "a", "side", 2, corev1.PodRunning)
	sc := gpuContainer("proxy", 1)
	sc.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	withSidecar.Spec.InitContainers = []corev1.Container{sc}
	for _, tc := range []struct {
		name   string
		allocs []v1alpha1.Allocation
		pods   []corev1.Pod
		want   int32 // used GPUs of node a (8 GPUs)
	}{
		{"an admitted job's pods count once", []v1alpha1.Allocation{placedAlloc("run", v1alpha1.AllocationAdmitted, "a", 4)},
			[]corev1.Pod{boundPod("run-0", "a", "run", 4, corev1.PodRunning)}, 4},
		{"a promise counts before its pods exist", []v1alpha1.Allocation{placedAlloc("run", v1alpha1.AllocationAdmitted, "a", 4)}, nil, 4},
		{"another workload's pod", nil, []corev1.Pod{boundPod("other", "a", "", 3, corev1.PodRunning)}, 3},
		{"another workload's pod, pending on the node", nil, []corev1.Pod{boundPod("other", "a", "", 3, corev1.PodPending)}, 3},
		{"finished pods hold nothing", nil, []corev1.Pod{boundPod("ok", "a", "", 3, corev1.PodSucceeded), boundPod("bad", "a", "", 2, corev1.PodFailed)}, 0},
		{"unbound pods hold nothing", nil, []corev1.Pod{boundPod("pending", "", "", 3, corev1.PodPending)}, 0},
		{"pods on another node", nil, []corev1.Pod{boundPod("other", "b", "", 3, corev1.PodRunning)}, 0},
		{"a deleted job's terminating pods", nil, []corev1.Pod{boundPod("gone-0", "a", "gone", 4, corev1.PodRunning)}, 4},
		{"a requeued job's terminating pods", []v1alpha1.Allocation{placedAlloc("back", v1alpha1.AllocationQueued, "", 4)},
			[]corev1.Pod{boundPod("back-0", "a", "back", 4, corev1.PodRunning)}, 4},
		{"an init container larger than the pod set", []v1alpha1.Allocation{placedAlloc("init", v1alpha1.AllocationAdmitted, "a", 1)},
			[]corev1.Pod{withInit}, 3},
		{"a sidecar beside the pod set", []v1alpha1.Allocation{placedAlloc("side", v1alpha1.AllocationAdmitted, "a", 2)},
			[]corev1.Pod{withSidecar}, 3},
		{"a job's pod on a node its placement does not name", []v1alpha1.Allocation{placedAlloc("moved", v1alpha1.AllocationAdmitted, "b", 4)},
			[]corev1.Pod{boundPod("moved-0", "a", "moved", 4, corev1.PodRunning)}, 4},
		{"a pod set placed without GPUs whose pod holds some", []v1alpha1.Allocation{placedAlloc("cpu", v1alpha1.AllocationAdmitted, "a", 0)},
			[]corev1.Pod{boundPod("cpu-0", "a", "cpu", 2, corev1.PodRunning)}, 2},
		{"everything together", []v1alpha1.Allocation{placedAlloc("run", v1alpha1.AllocationAdmitted, "a", 2)},
			[]corev1.Pod{boundPod("run-0", "a", "run", 2, corev1.PodRunning), boundPod("other", "a", "", 1, corev1.PodRunning), boundPod("gone-0", "a", "gone", 1, corev1.PodRunning)}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := make([]*v1alpha1.Allocation, len(tc.allocs))
			for i := range tc.allocs {
				allocs[i] = &tc.allocs[i]
			}
			pods := make([]*corev1.Pod, len(tc.pods))
			for i := range tc.pods {
				pods[i] = &tc.pods[i]
			}
			s := BuildSnapshot(utiltesting.Epoch, []*corev1.Node{new(gpuNode("a", 8)), new(gpuNode("b", 8))}, allocs, pods, nil, view)
			for _, n := range s.Nodes {
				if n.Name == "a" && n.Used != tc.want {
					t.Errorf("node a used %d GPUs, want %d", n.Used, tc.want)
				}
			}
		})
	}
}
