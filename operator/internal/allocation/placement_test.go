package allocation

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

func TestPlacementRoundTrip(t *testing.T) {
	masterWorkers := []v1alpha1.PodSet{{Name: "Master", Count: 1, GPUsPerPod: 4}, {Name: "Worker", Count: 3, GPUsPerPod: 4}}
	cases := map[string]struct {
		sets      []v1alpha1.PodSet
		slots     []sched.Slot
		want      []v1alpha1.NodeAssignment
		wantNodes map[string][]string // pod set -> node of each index
	}{
		"one node per pod": {
			sets:  masterWorkers,
			slots: []sched.Slot{{Node: "a", Workers: 1, GPUs: 4}, {Node: "b", Workers: 1, GPUs: 4}, {Node: "c", Workers: 1, GPUs: 4}, {Node: "d", Workers: 1, GPUs: 4}},
			want: []v1alpha1.NodeAssignment{
				{PodSet: "Master", Node: "a", Pods: 1, GPUs: 4},
				{PodSet: "Worker", Node: "b", Pods: 1, GPUs: 4},
				{PodSet: "Worker", Node: "c", Pods: 1, GPUs: 4},
				{PodSet: "Worker", Node: "d", Pods: 1, GPUs: 4},
			},
			wantNodes: map[string][]string{"Master": {"a"}, "Worker": {"b", "c", "d"}},
		},
		"two pods per node, split across pod sets": {
			sets:  masterWorkers,
			slots: []sched.Slot{{Node: "a", Workers: 2, GPUs: 8}, {Node: "b", Workers: 2, GPUs: 8}},
			want: []v1alpha1.NodeAssignment{
				{PodSet: "Master", Node: "a", Pods: 1, GPUs: 4},
				{PodSet: "Worker", Node: "a", Pods: 1, GPUs: 4},
				{PodSet: "Worker", Node: "b", Pods: 2, GPUs: 8},
			},
			wantNodes: map[string][]string{"Master": {"a"}, "Worker": {"a", "b", "b"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ToAssignments(tc.sets, tc.slots)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ToAssignments (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.slots, ToSlots(got)); diff != "" {
				t.Errorf("ToSlots(ToAssignments) (-want +got):\n%s", diff)
			}
			for set, nodes := range tc.wantNodes {
				for i, want := range nodes {
					if n, ok := NodeFor(got, set, int32(i)); !ok || n != want {
						t.Errorf("NodeFor(%s, %d) = %q, %v; want %q", set, i, n, ok, want)
					}
				}
				if _, ok := NodeFor(got, set, int32(len(nodes))); ok {
					t.Errorf("NodeFor(%s, %d) found a node past the pod set", set, len(nodes))
				}
			}
		})
	}
}
