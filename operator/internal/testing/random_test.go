package testing_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestRandomSnapshotSizes(t *testing.T) {
	s := utiltesting.RandomSnapshot(1, utiltesting.RandomConfig{Nodes: 300, GPUsPerNode: 8, Running: 2000, Queued: 5000})
	ix := sched.NewIndex(s)
	got := map[string]int{"nodes": len(s.Nodes), "running+suspending": len(ix.Running) + len(ix.Suspending), "queued": len(ix.Queued)}
	want := map[string]int{"nodes": 300, "running+suspending": 2000, "queued": 5000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sizes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s, utiltesting.RandomSnapshot(1, utiltesting.RandomConfig{Nodes: 300, GPUsPerNode: 8, Running: 2000, Queued: 5000})); diff != "" {
		t.Errorf("same seed, different snapshot:\n%.2000s", diff)
	}
}

func TestBuildersDeriveUsed(t *testing.T) {
	s := utiltesting.MakeSnapshot(utiltesting.Epoch).
		Nodes(utiltesting.MakeNode("b", 8).Obj(), utiltesting.MakeNode("a", 8).Obj()).
		Jobs(
			utiltesting.MakeJob("x").GPUs(3, 2).Running("a", "a", "b").Obj(),
			utiltesting.MakeJob("y").GPUs(1, 1).Suspending(sched.SuspendNow, "", "b").Obj(),
			utiltesting.MakeJob("z").GPUs(1, 4).Reserved("b").Obj(),
		).Obj()
	want := []sched.Node{{Name: "a", GPUs: 8, Used: 4}, {Name: "b", GPUs: 8, Used: 3}}
	if diff := cmp.Diff(want, s.Nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	wantPl := []sched.Slot{{Node: "a", Workers: 2, GPUs: 4}, {Node: "b", Workers: 1, GPUs: 2}}
	if diff := cmp.Diff(wantPl, s.Jobs[0].Placement); diff != "" {
		t.Errorf("placement (-want +got):\n%s", diff)
	}
}
