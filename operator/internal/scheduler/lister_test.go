package scheduler

import (
	"context"
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

// TestReaderListers: a list through a client returns its items, each of the kind asked for;
// a list the client refuses is the client's error.
func TestReaderListers(t *testing.T) {
	st := scaleStores(2, 3, 1)
	c := storeClient{stores: st}
	ctx := context.Background()
	nodes, err := NodeReaderLister(c)(ctx)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("NodeReaderLister = %d nodes, %v; want 2", len(nodes), err)
	}
	allocs, err := ReaderLister(c)(ctx)
	if err != nil || len(allocs) != 3 {
		t.Fatalf("ReaderLister = %d Allocations, %v; want 3", len(allocs), err)
	}
	pods, err := PodReaderLister(c)(ctx)
	if err != nil || len(pods) != 1 || pods[0].Name != "job-00000-master-0" {
		t.Fatalf("PodReaderLister = %v, %v; want the pod job-00000-master-0", pods, err)
	}
	if _, err := PodReaderLister(storeClient{stores: map[string]toolscache.Store{}})(ctx); err == nil {
		t.Error("PodReaderLister through a client without pods: no error")
	}
}
