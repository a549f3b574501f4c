package scheduler

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// Assumed holds the Allocations this operator process wrote that its informer cache may not
// show yet, so that the scheduler's snapshot can come from the cache and still contain every
// write the process made: an admission (without it, a cycle right after one would see the
// job Queued and its GPUs free, and promise them again), a preemption, a job's creation and
// its Queued status (the controllers queue the event in the Inbox after the write, and the
// snapshot of the cycle that delivers the event must contain it).
//
// Every Allocation write of the process goes through the client that Client returns, which
// records what the API server answered, and every Get of an Allocation through it returns the
// process's own write where the cache does not show it yet. An assumed object stands in for
// the cached one until the cache shows that write or a later one (its resourceVersion reaches
// the assumed one: the scheme of kube-scheduler's assume cache, k8s.io/kubernetes
// pkg/scheduler/util/assumecache, which also orders resourceVersions as integers, as etcd
// issues them). One the cache does
// not hold at all is a creation the cache has not seen yet, or an object deleted since: after
// Grace it is read from the API server once, and dropped if it is gone.
//
// A write whose outcome is unknown (the request failed without a status from the API
// server) may have happened: the next snapshot is then listed from the API server.
//
// Assumptions are recorded when a write succeeds, never inside a policy's Schedule: a
// decision that Validate rejects, or whose write fails, leaves nothing behind.
type Assumed struct {
	// Clock times the assumptions (Grace).
	Clock clock.PassiveClock
	// Grace is how long an assumed object that the cache does not hold is trusted before
	// the API server is asked whether it still exists (default 10 s).
	Grace time.Duration

	mu   sync.Mutex
	objs map[types.NamespacedName]assumption
	// unsure counts the writes whose outcome is unknown; listed is its value when the
	// last list from the API server started.
	unsure, listed uint64
}

type assumption struct {
	obj *v1alpha1.Allocation
	rv  uint64
	at  time.Time
}

// NewAssumed returns an empty set of assumptions.
func NewAssumed(c clock.PassiveClock) *Assumed {
	return &Assumed{Clock: c, Grace: 10 * time.Second}
}

// Client returns c with every successful Allocation write (create, update, patch, status
// update or patch) recorded, and every failed one whose outcome is unknown counted.
func (as *Assumed) Client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if a, ok := obj.(*v1alpha1.Allocation); ok {
				as.newer(a)
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return as.written(obj, c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return as.written(obj, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return as.written(obj, c.Patch(ctx, obj, patch, opts...))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			if a, ok := obj.(*v1alpha1.Allocation); ok {
				if err == nil || apierrors.IsNotFound(err) {
					as.forget(client.ObjectKeyFromObject(a))
				} else {
					as.failed(err)
				}
			}
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return as.written(obj, c.SubResource(sub).Update(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return as.written(obj, c.SubResource(sub).Patch(ctx, obj, patch, opts...))
		},
	})
}

// written records the outcome of a write of obj and returns err.
func (as *Assumed) written(obj client.Object, err error) error {
	a, ok := obj.(*v1alpha1.Allocation)
	if !ok {
		return err
	}
	if err != nil {
		as.failed(err)
		return err
	}
	as.Assume(a)
	return nil
}

// failed counts a failed write whose outcome is unknown: an error the API server did not
// answer with a status, or one it answers while the write may still happen (a timeout).
func (as *Assumed) failed(err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsInternalError(err) {
		return // refused: nothing was written
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.unsure++
}

// Assume records a written Allocation (a holds the resourceVersion the API server returned).
// An object whose resourceVersion is not an integer is not assumed: the next snapshot is
// listed from the API server instead.
func (as *Assumed) Assume(a *v1alpha1.Allocation) {
	rv, err := strconv.ParseUint(a.ResourceVersion, 10, 64)
	as.mu.Lock()
	defer as.mu.Unlock()
	if err != nil {
		as.unsure++
		return
	}
	if old, ok := as.objs[client.ObjectKeyFromObject(a)]; ok && old.rv > rv {
		return // a later write was recorded first
	}
	if as.objs == nil {
		as.objs = map[types.NamespacedName]assumption{}
	}
	as.objs[client.ObjectKeyFromObject(a)] = assumption{obj: a.DeepCopy(), rv: rv, at: as.Clock.Now()}
}

// newer replaces a, read from the cache, with this process's own write of it where that is
// later than what the cache shows (read your own writes: a reconcile right after a write
// must not act on the version before it and fail on a conflict). The assumption is dropped
// once the cache shows it, or a later version.
func (as *Assumed) newer(a *v1alpha1.Allocation) {
	rv, err := strconv.ParseUint(a.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	key := client.ObjectKeyFromObject(a)
	as.mu.Lock()
	defer as.mu.Unlock()
	old, ok := as.objs[key]
	switch {
	case !ok:
	case old.rv > rv:
		old.obj.DeepCopyInto(a)
	default:
		delete(as.objs, key)
	}
}

func (as *Assumed) forget(key types.NamespacedName) {
	as.mu.Lock()
	defer as.mu.Unlock()
	delete(as.objs, key)
}

// Len is the number of assumptions held.
func (as *Assumed) Len() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.objs)
}

// List lists the Allocations from cache with the assumptions in place of what the cache does
// not show yet; after a write of unknown outcome, from api instead. The Allocations listed
// from cache are the cache's own: callers must not change them, only copies.
func (as *Assumed) List(ctx context.Context, cache Lister, api client.Reader) ([]*v1alpha1.Allocation, error) {
	as.mu.Lock()
	unsure := as.unsure
	fromAPI := unsure != as.listed
	as.mu.Unlock()
	var list []*v1alpha1.Allocation
	var err error
	if fromAPI {
		list, err = ReaderLister(api)(ctx)
	} else {
		list, err = cache(ctx)
	}
	if err != nil {
		return nil, err
	}
	if fromAPI {
		as.mu.Lock()
		as.listed = max(as.listed, unsure)
		as.mu.Unlock()
	}
	items, check := as.overlay(list)
	// An assumed object that the list has lacked for Grace: ask the API server whether it
	// still exists (outside the lock: writes record assumptions meanwhile).
	for _, key := range check {
		fresh := &v1alpha1.Allocation{}
		err := api.Get(ctx, key, fresh)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		as.mu.Lock()
		asm, ok := as.objs[key]
		switch {
		case err != nil: // gone
			if ok && as.Clock.Now().Sub(asm.at) >= as.Grace {
				delete(as.objs, key)
			}
		default:
			if rv, perr := strconv.ParseUint(fresh.ResourceVersion, 10, 64); perr != nil || !ok || rv >= asm.rv {
				delete(as.objs, key)
				items = append(items, fresh)
			} else {
				items = append(items, asm.obj.DeepCopy())
			}
		}
		as.mu.Unlock()
	}
	return items, nil
}

// overlay replaces, in items, every Allocation with an assumption the list does not show yet
// by the assumed object, adds the assumed ones the list lacks (created, not yet cached), and
// forgets the assumptions the list has caught up with. It returns the keys of assumptions
// the list has lacked for Grace or longer, left for the caller to read from the API server.
func (as *Assumed) overlay(items []*v1alpha1.Allocation) ([]*v1alpha1.Allocation, []types.NamespacedName) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.objs) == 0 {
		return items, nil
	}
	listed := make(map[types.NamespacedName]bool, len(as.objs))
	for i := range items {
		key := client.ObjectKeyFromObject(items[i])
		asm, ok := as.objs[key]
		if !ok {
			continue
		}
		listed[key] = true
		if rv, err := strconv.ParseUint(items[i].ResourceVersion, 10, 64); err != nil || rv >= asm.rv {
			delete(as.objs, key)
			continue
		}
		items[i] = asm.obj.DeepCopy()
	}
	now := as.Clock.Now()
	var check []types.NamespacedName
	for key, asm := range as.objs {
		switch {
		case listed[key]:
		case now.Sub(asm.at) >= as.Grace:
			check = append(check, key)
		default:
			items = append(items, asm.obj.DeepCopy())
		}
	}
	return items, check
}
