package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// TestJobMemoMatchesConversion: snapshots built with the memo across cycles equal those
// built by converting every Allocation afresh, while the objects are kept, replaced (as the
// informer's store replaces a changed object), their pods' progress changes and time passes;
// and a policy's change to a snapshot's job does not reach the next snapshot.
func TestJobMemoMatchesConversion(t *testing.T) {
	view := jobframework.NodeView{GPUResource: gpuRes, GPUProductLabel: "nvidia.com/gpu.product"}
	nodes := []corev1.Node{gpuNode("a", 8), gpuNode("b", 8)}
	running := placedAlloc("running", v1alpha1.AllocationAdmitted, "a", 2)
	running.Status.LastAdmitted = &metav1.Time{Time: utiltesting.Epoch}
	running.Status.AttainedGPUSeconds = 60
	queued := placedAlloc("queued", v1alpha1.AllocationQueued, "", 1)
	done := placedAlloc("done", v1alpha1.AllocationFinished, "b", 1)
	allocs := []*v1alpha1.Allocation{&running, &queued, &done}

	memo := &jobMemo{}
	progress := map[string]allocation.PodProgress{}
	cycle := func(step string, now time.Time) {
		t.Helper()
		end := memo.begin()
		got := buildSnapshot(now, nodes, allocs, nil, progress, view, memo)
		end()
		want := BuildSnapshot(now, nodes, allocs, nil, progress, view)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: snapshot with the memo differs (-fresh +memo):\n%s", step, diff)
		}
		// What a policy does to its snapshot's jobs.
		for _, j := range got.Jobs {
			j.Attained += time.Hour
			j.EpochsDone = 99
			j.Phase = sched.Suspending
		}
	}

	cycle("first", utiltesting.Epoch.Add(time.Minute))
	cycle("unchanged, later", utiltesting.Epoch.Add(2*time.Minute))
	progress["ns/running"] = allocation.PodProgress{Pods: 1, EpochsDone: 3, EpochTime: 20 * time.Second}
	cycle("progress reported", utiltesting.Epoch.Add(3*time.Minute))

	// The store replaces a changed object: the job is converted again.
	started := queued.DeepCopy()
	started.Status.Phase = v1alpha1.AllocationAdmitted
	started.Status.Placement = []v1alpha1.NodeAssignment{{PodSet: "Master", Node: "b", Pods: 1, GPUs: 1}}
	started.Status.LastAdmitted = &metav1.Time{Time: utiltesting.Epoch.Add(3 * time.Minute)}
	allocs[1] = started
	cycle("queued job started", utiltesting.Epoch.Add(4*time.Minute))

	// An object the cycle before did not list is forgotten.
	allocs = allocs[1:]
	cycle("running job gone", utiltesting.Epoch.Add(5*time.Minute))
	// Entries of objects no longer listed are dropped once they are a quarter of all.
	for i := range 100 {
		a := placedAlloc(fmt.Sprintf("extra-%d", i), v1alpha1.AllocationQueued, "", 1)
		allocs = append(allocs, &a)
	}
	cycle("many more listed", utiltesting.Epoch.Add(6*time.Minute))
	allocs = allocs[:2]
	cycle("most gone", utiltesting.Epoch.Add(7*time.Minute))
	if len(memo.entries) != 2 {
		t.Errorf("the memo holds %d entries after a cycle that listed 2", len(memo.entries))
	}
}

// BenchmarkSnapshot builds the snapshot of 1,000 nodes of 8 GPUs and 5,000 one-GPU jobs, the
// half of them running, converting every Allocation afresh ("fresh") or through the memo of
// a cycle before, in which 1% of the Allocations changed since ("memo").
func BenchmarkSnapshot(b *testing.B) {
	view := jobframework.NodeView{GPUResource: gpuRes, GPUProductLabel: "nvidia.com/gpu.product"}
	nodes := make([]corev1.Node, 1000)
	for i := range nodes {
		nodes[i] = gpuNode(fmt.Sprintf("node-%04d", i), 8)
	}
	allocs := make([]*v1alpha1.Allocation, 5000)
	for i := range allocs {
		phase, node := v1alpha1.AllocationQueued, ""
		if i%2 == 0 {
			phase, node = v1alpha1.AllocationAdmitted, fmt.Sprintf("node-%04d", i/2%1000)
		}
		a := placedAlloc(fmt.Sprintf("job-%05d", i), phase, node, 1)
		a.Namespace = fmt.Sprintf("team-%02d", i%20)
		a.Status.LastAdmitted = &metav1.Time{Time: utiltesting.Epoch}
		allocs[i] = &a
	}
	now := utiltesting.Epoch.Add(time.Hour)
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			BuildSnapshot(now, nodes, allocs, nil, nil, view)
		}
	})
	b.Run("memo", func(b *testing.B) {
		memo := &jobMemo{}
		memo.begin()()
		buildSnapshot(now, nodes, allocs, nil, nil, view, memo)
		i := 0
		for b.Loop() {
			for range len(allocs) / 100 {
				allocs[i%len(allocs)] = allocs[i%len(allocs)].DeepCopy()
				i++
			}
			end := memo.begin()
			buildSnapshot(now, nodes, allocs, nil, nil, view, memo)
			end()
		}
	})
}
