package scheduler

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// Lister lists every Allocation, in a slice of the caller's own. The Allocations in it may
// be shared with a cache: callers must not change them, only copies.
type Lister func(ctx context.Context) ([]*v1alpha1.Allocation, error)

// ReaderLister lists through r (with opts).
func ReaderLister(r client.Reader, opts ...client.ListOption) Lister {
	return func(ctx context.Context) ([]*v1alpha1.Allocation, error) {
		var list v1alpha1.AllocationList
		if err := r.List(ctx, &list, opts...); err != nil {
			return nil, err
		}
		out := make([]*v1alpha1.Allocation, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
}

// StoreLister lists the objects of an informer's store as they are held there, without
// copying them: a list through the cache client copies each Allocation into the list's
// items at least, which was most of a snapshot's time at 5,000 Allocations.
func StoreLister(st toolscache.Store) Lister {
	return func(context.Context) ([]*v1alpha1.Allocation, error) {
		objs := st.List()
		out := make([]*v1alpha1.Allocation, 0, len(objs))
		for _, o := range objs {
			a, ok := o.(*v1alpha1.Allocation)
			if !ok {
				return nil, fmt.Errorf("allocation store holds a %T", o)
			}
			out = append(out, a)
		}
		return out, nil
	}
}
