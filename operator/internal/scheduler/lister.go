package scheduler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// ListFunc lists every object of a kind, in a slice of the caller's own. The objects in it
// may be shared with a cache: callers must not change them, only copies.
type ListFunc[T any] func(ctx context.Context) ([]T, error)

type (
	// Lister lists the Allocations.
	Lister = ListFunc[*v1alpha1.Allocation]
	// NodeLister lists the nodes.
	NodeLister = ListFunc[*corev1.Node]
	// PodLister lists pods.
	PodLister = ListFunc[*corev1.Pod]
)

// ReaderLister lists the Allocations through r (with opts).
func ReaderLister(r client.Reader, opts ...client.ListOption) Lister {
	return readerList[*v1alpha1.Allocation](r, func() client.ObjectList { return &v1alpha1.AllocationList{} }, opts...)
}

// NodeReaderLister lists the nodes through r (with opts).
func NodeReaderLister(r client.Reader, opts ...client.ListOption) NodeLister {
	return readerList[*corev1.Node](r, func() client.ObjectList { return &corev1.NodeList{} }, opts...)
}

// PodReaderLister lists the pods through r (with opts).
func PodReaderLister(r client.Reader, opts ...client.ListOption) PodLister {
	return readerList[*corev1.Pod](r, func() client.ObjectList { return &corev1.PodList{} }, opts...)
}

// readerList lists through r into a new list of newList's and returns its items.
func readerList[T client.Object](r client.Reader, newList func() client.ObjectList, opts ...client.ListOption) ListFunc[T] {
	return func(ctx context.Context) ([]T, error) {
		list := newList()
		if err := r.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		out := make([]T, len(items))
		for i, o := range items {
			t, ok := o.(T)
			if !ok {
				return nil, fmt.Errorf("list %T holds a %T", list, o)
			}
			out[i] = t
		}
		return out, nil
	}
}

// StoreItems returns the objects of an informer's store as they are held there, without
// copying them; each must be a T. Callers must not change them. A list through the cache
// client copies each object's struct into the list's items even without a deep copy: for
// the Allocations it was most of a snapshot's time at 5,000 of them, for 1,000 nodes 1.7 s of
// a snapshot's 9.6 s in the admission stage (make bench-admission), and 5,000 pods listed
// twice were 12 MB of a snapshot's allocations (BenchmarkSnapshot).
func StoreItems[T any](st toolscache.Store) ([]T, error) {
	objs := st.List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("store of %T holds a %T", want, o)
		}
		out = append(out, t)
	}
	return out, nil
}
