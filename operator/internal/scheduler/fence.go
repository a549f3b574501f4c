package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Fence keeps two schedulers that run at once (leader election off, or two leaders for a
// moment after a partition) from promising the same GPUs. Leader election makes that rare;
// the fence makes it impossible, whatever the timing.
//
// The fence is one Lease. Every cycle reads it before its snapshot, and a cycle that
// promises GPUs (starts, grows) first replaces it, compare-and-swap on the resourceVersion
// it read, with the promises it is about to write. So:
//
//   - Two cycles that read the same fence cannot both act: the second swap fails, its
//     decisions are dropped, and it decides again on a fresh snapshot.
//   - A cycle that reads the fence after another's swap sees that other's promises, and
//     counts as used those whose write has not landed yet: the promise names the
//     resourceVersion of the Allocation it was decided on, and the write that carries it
//     out is guarded by that version, so while the listed Allocation still has it the write
//     may yet land; once it has another, the listing shows what became of the promise (the
//     write landed, or something else changed the Allocation and the write will fail).
//
// A scheduler ignores its own promises (its snapshot shows its writes in flight, see
// inflight) and another's older than PromiseTTL (a scheduler that died between its swap and
// its writes). Since a cycle returns before its writes end, each swap carries the promises
// of every write of the scheduler still in flight, not only the cycle's own.
type Fence struct {
	// Reader reads the Lease, from the informer cache or the API server; Client writes it.
	// A read from a cache that lags behind another scheduler's swap is safe: the swap that
	// follows it fails on the resourceVersion, and the cycle decides again. One that lags
	// behind this scheduler's own swaps goes against the Lease they left (commit).
	Reader client.Reader
	Client client.Client
	Clock  clock.Clock
	// Key names the Lease (FenceName in the operator's namespace).
	Key types.NamespacedName
	// Identity names this scheduler in the Lease's holder.
	Identity string
	// SwapTimeout bounds one swap (DefaultSwapTimeout when zero). No cycle runs while a swap
	// is in flight, so a request the API server never answers would otherwise stop the
	// scheduler.
	SwapTimeout time.Duration

	mu sync.Mutex
	// after maps the resourceVersion each of this scheduler's recent swaps started from to
	// the one it left, and latest is the Lease as its last swap left it (see commit).
	after  map[string]string
	latest *coordinationv1.Lease
	// order is after's keys, oldest first.
	order []string
	// last is closed when the last swap queued has ended.
	last chan struct{}
	// created is the Lease as this scheduler created it, if it did.
	created *coordinationv1.Lease
}

// keepSwaps bounds how many of its own swaps a scheduler remembers (Fence.after, two
// resourceVersions each). A cycle reads the fence from the informer cache, which may lag
// behind the scheduler's own swaps by seconds on a saturated API server, at several swaps a
// second. With 64 remembered, 1,714 of the 2,758 swaps of a 5,000-job run on the scale
// cluster failed with a conflict though no other scheduler ran, and each dropped its cycle's
// decisions.
const keepSwaps = 4096

// DefaultSwapTimeout is Fence.SwapTimeout's default: a swap takes 100 to 300 ms at the API
// server of a saturated 5,000-job test cluster (docs/operator.md), and a third of PromiseTTL
// leaves the batch's writes the rest of it. A swap that times out may still land; its
// promises then count for others until PromiseTTL, and its batch writes nothing.
const DefaultSwapTimeout = PromiseTTL / 3

// FenceName is the name of the fence's Lease.
const FenceName = "pickyman-scheduler-fence"

// PromiseTTL is how long another scheduler's promises in the fence count: far longer than
// a cycle's writes take.
const PromiseTTL = 30 * time.Second

// annotationPromises holds a fence's promises, as JSON.
const annotationPromises = "pickyman.dev/promises"

// promise is GPUs a cycle promised a job on a node: the job's whole holding there after the
// cycle's writes, decided on the Allocation at ResourceVersion.
type promise struct {
	Job             string `json:"job"`
	ResourceVersion string `json:"resourceVersion"`
	Node            string `json:"node"`
	GPUs            int32  `json:"gpus"`
	// Holder is the scheduler that made the promise, and At when (Unix milliseconds); for
	// the promises of the scheduler that swapped the fence last they are left out, and the
	// Lease's holder and renew time stand in.
	Holder string `json:"holder,omitempty"`
	At     int64  `json:"at,omitempty"`
}

// fenceState is the fence as one cycle read it.
type fenceState struct {
	lease *coordinationv1.Lease
	// others are the promises of other schedulers still within PromiseTTL.
	others []promise
}

// read reads the fence, creating it if it does not exist.
func (f *Fence) read(ctx context.Context) (*fenceState, error) {
	l := &coordinationv1.Lease{}
	err := f.Reader.Get(ctx, f.Key, l)
	if apierrors.IsNotFound(err) {
		f.mu.Lock()
		known := f.created
		f.mu.Unlock()
		if known != nil {
			// Created by this scheduler, and not in the cache yet.
			l, err = known.DeepCopy(), nil
		} else {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: f.Key.Name, Namespace: f.Key.Namespace}}
			if err = f.Client.Create(ctx, l); apierrors.IsAlreadyExists(err) {
				err = f.Reader.Get(ctx, f.Key, l)
			} else if err == nil {
				f.mu.Lock()
				f.created = l.DeepCopy()
				f.mu.Unlock()
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler fence %s: %w", f.Key, err)
	}
	st := &fenceState{lease: l}
	v := l.Annotations[annotationPromises]
	if v == "" {
		return st, nil
	}
	var all []promise
	if err := json.Unmarshal([]byte(v), &all); err != nil {
		// Promises that cannot be read cannot be counted: refuse to act on them.
		return nil, fmt.Errorf("scheduler fence %s: promises: %w", f.Key, err)
	}
	holder, renewed := "", int64(0)
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.UnixMilli()
	}
	for _, p := range all {
		if p.Holder == "" {
			p.Holder, p.At = holder, renewed
		}
		if p.Holder == "" || p.Holder == f.Identity || f.Clock.Since(time.UnixMilli(p.At)) > PromiseTTL {
			continue
		}
		st.others = append(st.others, p)
	}
	return st, nil
}

// queue takes the next turn to swap: it returns a channel that is closed when every swap
// queued before has ended, and the function that ends this one.
func (f *Fence) queue() (<-chan struct{}, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.last
	if prev == nil {
		prev = make(chan struct{})
		close(prev)
	}
	mine := make(chan struct{})
	f.last = mine
	return prev, sync.OnceFunc(func() { close(mine) })
}

// swapping reports whether a swap queued is still to end.
func (f *Fence) swapping() bool {
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	if last == nil {
		return false
	}
	select {
	case <-last:
		return false
	default:
		return true
	}
}

// commit swaps in this scheduler's promises ps and the promises of others it keeps (each
// with its own holder and time); it fails with a conflict if another scheduler swapped
// since st was read.
//
// Swaps of one scheduler are sent after their cycles, one at a time in the cycles' order
// (queue), so a cycle may have read the fence before the swaps of the cycles just before it
// landed. Those swaps changed nothing but this scheduler's own promises, which the cycle's
// snapshot holds as writes in flight: the swap then goes against the Lease they left. Any
// other scheduler's swap in between still fails it.
func (f *Fence) commit(ctx context.Context, st *fenceState, ps, others []promise) error {
	base := st.lease
	f.mu.Lock()
	rv := base.ResourceVersion
	for range len(f.order) {
		next, ok := f.after[rv]
		if !ok {
			break
		}
		rv = next
	}
	if rv != base.ResourceVersion && f.latest != nil && f.latest.ResourceVersion == rv {
		// Every change since the read was a swap of this scheduler's. A chain that ends
		// elsewhere passed a version another scheduler left, and the swap against the read
		// fails as it should.
		base = f.latest
	}
	f.mu.Unlock()
	// This scheduler's own promises name no holder or time: the Lease's holder and renew
	// time, which the swap sets, stand for them. That keeps a promise near 100 bytes, and a
	// cycle's MaxPromises well within the API server's 256 KiB for annotations.
	all := make([]promise, 0, len(ps)+len(others))
	for _, p := range ps {
		p.Holder, p.At = "", 0
		all = append(all, p)
	}
	all = append(all, others...)
	b, err := json.Marshal(all)
	if err != nil {
		return err
	}
	l := base.DeepCopy()
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotationPromises] = string(b)
	now := metav1.NewMicroTime(f.Clock.Now())
	id := f.Identity
	l.Spec.HolderIdentity, l.Spec.RenewTime = &id, &now
	timeout := f.SwapTimeout
	if timeout <= 0 {
		timeout = DefaultSwapTimeout
	}
	uctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := f.Client.Update(uctx, l); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("scheduler fence read at resourceVersion %s, swapped against %s: %w", st.lease.ResourceVersion, base.ResourceVersion, err)
		}
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.after == nil {
		f.after = map[string]string{}
	}
	f.after[base.ResourceVersion] = l.ResourceVersion
	f.latest = l
	f.order = append(f.order, base.ResourceVersion)
	if len(f.order) > keepSwaps {
		delete(f.after, f.order[0])
		f.order = f.order[1:]
	}
	return nil
}

// countPromises adds to the snapshot's nodes the GPUs of the fence's other promises whose
// write has not landed: their Allocation is listed at the version they were decided on. It
// returns the promises that a swap of this scheduler must keep in the fence: those whose
// write has not landed as far as this snapshot shows (listed at their version, or not
// listed: another scheduler's cache may show what this one's does not yet). Promises are
// otherwise dropped only past PromiseTTL.
func countPromises(snap *sched.Snapshot, allocs map[string]*v1alpha1.Allocation, ps []promise) []promise {
	idx := make(map[string]int, len(snap.Nodes))
	for i := range snap.Nodes {
		idx[snap.Nodes[i].Name] = i
	}
	var keep []promise
	for _, p := range ps {
		a := allocs[p.Job]
		if a == nil || a.ResourceVersion == p.ResourceVersion {
			keep = append(keep, p)
		}
		k, ok := idx[p.Node]
		if !ok {
			continue
		}
		if a == nil || a.ResourceVersion != p.ResourceVersion {
			continue // gone, or changed since: the listing shows the outcome
		}
		var held int32
		if allocation.HoldsGPUs(a) {
			held = allocation.GPUsByNode(a.Status.Placement)[p.Node]
		}
		if extra := p.GPUs - held; extra > 0 {
			snap.Nodes[k].Used += extra
		}
	}
	return keep
}

// MaxPromises bounds the promises one cycle carries out (a start promises GPUs on each node
// of its placement): the fence holds a cycle's promises in one annotation, and the API
// server refuses annotations over 256 KiB (about 2,300 promises). A cycle that decides more
// starts carries out the first ones in the policy's order, and the next cycle the rest. The
// bound holds for the promises of every write in flight together.
const MaxPromises = 1000

// limitStarts keeps the starts of d, in order, whose promises fit in max; it reports
// whether it dropped any. The rest of d is kept: a start dropped leaves its job Queued, and
// no other decision depends on it. With room left (max > 0), the first start is kept
// whatever its size, so that a gang wider than the bound can start at all.
func limitStarts(d sched.Decisions, max int) (sched.Decisions, bool) {
	n := 0
	for i, st := range d.Starts {
		nodes := map[string]bool{}
		for _, sl := range st.Placement {
			nodes[sl.Node] = true
		}
		if n += len(nodes); n > max && (i > 0 || max <= 0) {
			d.Starts = d.Starts[:i:i]
			return d, true
		}
	}
	return d, false
}

// promisesOf lists the GPUs decisions d promise: each start's placement, and each grow's
// placement after it (what the job holds until its restart plus what it adds).
func promisesOf(d sched.Decisions, allocs map[string]*v1alpha1.Allocation) []promise {
	var out []promise
	add := func(job string, slots []sched.Slot) {
		a := allocs[job]
		if a == nil {
			return // no write follows
		}
		seen := map[string]bool{}
		for _, sl := range slots {
			if !seen[sl.Node] {
				seen[sl.Node] = true
				out = append(out, promise{Job: job, ResourceVersion: a.ResourceVersion, Node: sl.Node, GPUs: sched.GPUsOn(slots, sl.Node)})
			}
		}
	}
	for _, st := range d.Starts {
		add(st.JobID, st.Placement)
	}
	for _, p := range d.Preemptions {
		if a := allocs[p.JobID]; a != nil && p.Resize != nil {
			add(p.JobID, sched.Union(allocation.ToSlots(a.Status.Placement), p.Resize))
		}
	}
	return out
}
