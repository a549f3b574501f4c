package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestStoreItems: the store's own objects come back, not copies; an object of another type
// in the store is an error that names both types.
func TestStoreItems(t *testing.T) {
	st := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	if err := st.Add(node); err != nil {
		t.Fatal(err)
	}
	got, err := StoreItems[*corev1.Node](st)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != node {
		t.Fatalf("StoreItems = %v, want the store's own node %p", got, node)
	}
	if err := st.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := StoreItems[*corev1.Node](st); err == nil || err.Error() != "store of *v1.Node holds a *v1.Pod" {
		t.Errorf("StoreItems with a pod in the store: err %v, want one naming *v1.Node and *v1.Pod", err)
	}
}
