package scheduler

import (
	"context"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// assumed holds the Allocations the scheduler wrote that its informer cache may not show
// yet. The snapshot is read from the cache; without this layer a cycle right after an
// admission would see the job still Queued and its GPUs free, and could promise them to
// another job. An assumed object stands in for the cached one until the cache shows the
// write or a later one (the cached resourceVersion reaches the assumed one), or until the
// Allocation is gone from the cache (deleted: the scheduler never creates Allocations, so
// one it wrote was in the cache before). The same scheme as kube-scheduler's assume cache
// (k8s.io/kubernetes pkg/scheduler/util/assumecache), which also orders resourceVersions
// as integers, as etcd issues them.
//
// Assumptions are recorded after a write succeeds, by act, never by the policy: a decision
// that Validate rejects, or whose write fails, leaves nothing behind.
type assumed struct {
	mu   sync.Mutex
	objs map[types.NamespacedName]*v1alpha1.Allocation
}

// assume records a written Allocation (a holds the resourceVersion the API server returned).
func (as *assumed) assume(a *v1alpha1.Allocation) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.objs == nil {
		as.objs = map[types.NamespacedName]*v1alpha1.Allocation{}
	}
	as.objs[client.ObjectKeyFromObject(a)] = a.DeepCopy()
}

// len is the number of assumptions held.
func (as *assumed) len() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.objs)
}

// overlay replaces, in the cached list, every Allocation the scheduler wrote and the cache
// does not show yet by what was written, and forgets the assumptions the cache has caught
// up with. Where either resourceVersion is not an integer, the object is read from the API
// server (reader) instead.
func (as *assumed) overlay(ctx context.Context, reader client.Reader, items []v1alpha1.Allocation) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.objs) == 0 {
		return nil
	}
	listed := make(map[types.NamespacedName]bool, len(as.objs))
	for i := range items {
		key := client.ObjectKeyFromObject(&items[i])
		a, ok := as.objs[key]
		if !ok {
			continue
		}
		listed[key] = true
		cached, errC := strconv.ParseUint(items[i].ResourceVersion, 10, 64)
		wrote, errW := strconv.ParseUint(a.ResourceVersion, 10, 64)
		switch {
		case errC != nil || errW != nil:
			fresh := &v1alpha1.Allocation{}
			if err := reader.Get(ctx, key, fresh); err != nil {
				return err
			}
			items[i] = *fresh
			delete(as.objs, key)
		case cached >= wrote:
			delete(as.objs, key)
		default:
			items[i] = *a.DeepCopy()
		}
	}
	for key := range as.objs {
		if !listed[key] {
			delete(as.objs, key)
		}
	}
	return nil
}
