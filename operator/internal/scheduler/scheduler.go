package scheduler

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/internal/metrics"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/predictor"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Scheduler runs the scheduling cycle. It is a leader-elected runnable: one cycle at a
// time, on changes (coalesced, through its Inbox), at the time the policy's decisions can
// next change without one (sched.Waker) or a reservation times out, and at the configured
// resync interval (scheduleInterval), which catches what sends no event. It writes
// Allocations only; the job and handshake controllers carry each Allocation's new state
// into its job and pods.
type Scheduler struct {
	// Client reads nodes, pods and Allocations from the manager's cache and writes
	// Allocations.
	Client client.Client
	// Reader reads from the API server directly: the Allocations when Assumed is nil (the
	// process's own last writes must be in the snapshot, or GPUs could be promised twice),
	// and what Assumed asks of it otherwise.
	Reader client.Reader
	// Assumed, if set, holds the process's Allocation writes that the cache may not show
	// yet: the snapshot's Allocations then come from the cache (Allocations, or Client) with
	// them in place (see Assumed); without it they are listed from the API server (Reader)
	// at each cycle.
	Assumed *Assumed
	// Allocations, if set, lists the cached Allocations without copying them (StoreItems);
	// without it they are listed through Client.
	Allocations Lister
	// Nodes, if set, lists the cached nodes without copying them (StoreItems); without
	// it they are listed through Client.
	Nodes NodeLister
	// JobPods, if set, lists the cached pods of PickyMan's jobs (those with an Allocation
	// label, for their progress) without copying them; without it they are listed through
	// Client.
	JobPods PodLister
	// BoundPods, if set, lists the pods of Pods without copying them; without it they are
	// listed through Pods.
	BoundPods PodLister

	Recorder events.EventRecorder
	Clock    clock.WithTicker
	Config   *configv1.Configuration
	Metrics  *metrics.Metrics
	Policy   sched.Policy
	// Observer, if set, is told what happens to jobs (a learning policy); New sets it to the
	// policy when the policy is one.
	Observer sched.Observer
	// Inbox carries the controllers' events and cycle requests.
	Inbox *Inbox
	// Cache, if set, is watched for node changes that should trigger a cycle.
	Cache cache.Cache
	// Fence, if set, keeps schedulers that run at once from promising the same GPUs (see
	// Fence).
	Fence *Fence
	// Pods, if set, holds the pods bound to nodes, of every workload, for the GPUs they hold
	// (see BuildSnapshot), and is watched for pods that stop holding them (a cycle can then
	// use them); without it only the pods of PickyMan jobs (Client) are counted.
	Pods cache.Cache

	// seen is the progress last reported to the observer, per job ID.
	seen map[string]allocation.PodProgress
	// rates turns the pods' read-rate reports into traffic events, per job ID.
	rates predictor.RateReports
	// progress is the pods' progress of the last snapshot, per job ID.
	progress map[string]allocation.PodProgress
	// lost are the Admitted Allocations of the last snapshot placed on a lost node
	// (onLostNode).
	lost []*v1alpha1.Allocation
	// reservationDue is when the earliest reservation of the last snapshot times out
	// (zero: none).
	reservationDue time.Time
	// inflight holds the Allocation writes sent by cycles and not ended yet.
	inflight *inflight
}

var (
	_ manager.Runnable               = (*Scheduler)(nil)
	_ manager.LeaderElectionRunnable = (*Scheduler)(nil)
)

// New returns a scheduler with its inbox; a policy that learns from events observes them.
func New(s Scheduler) *Scheduler {
	sch := &s
	if sch.Inbox == nil {
		sch.Inbox = NewInbox()
	}
	if obs, ok := sch.Policy.(sched.Observer); ok && sch.Observer == nil {
		sch.Observer = obs
	}
	sch.Inbox.setObserved(sch.Observer != nil)
	sch.seen = map[string]allocation.PodProgress{}
	sch.inflight = &inflight{}
	return sch
}

func (s *Scheduler) wakeUp() { s.Inbox.Trigger() }

// NeedLeaderElection reports that only the leader schedules.
func (s *Scheduler) NeedLeaderElection() bool { return true }

// Start runs cycles until ctx ends.
func (s *Scheduler) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("scheduler")
	ctx = log.IntoContext(ctx, logger)
	if s.Cache != nil {
		inf, err := s.Cache.GetInformer(ctx, &corev1.Node{})
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.wakeUp() },
			UpdateFunc: func(any, any) { s.wakeUp() },
			DeleteFunc: func(any) { s.wakeUp() },
		}); err != nil {
			return err
		}
	}
	if s.Pods != nil {
		if !s.Pods.WaitForCacheSync(ctx) {
			return ctx.Err() // no cycle before the pods that hold GPUs are known
		}
		inf, err := s.Pods.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			return err
		}
		gpu := corev1.ResourceName(s.Config.GPUResource)
		// The cache's field selector turns a pod that finishes into a deletion, so a
		// deletion is the one event that frees GPUs.
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if p, ok := obj.(*corev1.Pod); !ok || jobframework.GPULimit(&p.Spec, gpu) > 0 {
					s.wakeUp()
				}
			},
		}); err != nil {
			return err
		}
	}
	tick := s.Clock.NewTicker(s.Config.ScheduleInterval.Duration)
	defer tick.Stop()
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var woken <-chan time.Time
	// The writes still in flight when leadership ends fail with ctx; they are waited for,
	// so that none is sent after Start returns.
	defer s.inflight.batches.Wait()
	s.wakeUp()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.Inbox.wake:
		case <-tick.C():
		case <-woken:
		}
		if s.Fence != nil {
			// Swaps go one at a time: a cycle now would queue its swap behind the one in
			// flight. The swap's end wakes the scheduler (the flag is set before the check,
			// so an end in between wakes it too), and the next cycle decides on everything
			// that arrived meanwhile, in one batch.
			s.inflight.waitingForSwap.Store(true)
			if s.Fence.swapping() {
				continue
			}
			s.inflight.waitingForSwap.Store(false)
		}
		if _, err := s.cycle(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "scheduling cycle failed")
		}
		// Requeue for the time the decision can next change without an event.
		if timer != nil {
			timer.Stop()
		}
		timer, woken = nil, nil
		if at := s.nextWake(); !at.IsZero() {
			timer = s.Clock.NewTimer(max(at.Sub(s.Clock.Now()), minWakeDelay))
			woken = timer.C()
		}
	}
}

// minWakeDelay bounds how soon after a cycle a wake-up may call the next one, so that a
// wake-up time already passed (a failed cycle) cannot spin the loop.
const minWakeDelay = 100 * time.Millisecond

// nextWake is when the last cycle's decisions can next change without an event: the
// policy's wake-up time (sched.Waker) or the earliest reservation timeout, whichever comes
// first; zero if neither.
func (s *Scheduler) nextWake() time.Time {
	at := s.reservationDue
	if w, ok := s.Policy.(sched.Waker); ok {
		if t := w.NextWake(); !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// Cycle runs one scheduling cycle and waits for the Allocation writes it sent; it returns
// their errors with the cycle's own.
func (s *Scheduler) Cycle(ctx context.Context) error {
	b, err := s.cycle(ctx)
	if err != nil || b == nil {
		return err
	}
	return b.wait()
}

// cycle runs one scheduling cycle (docs/operator.md) and returns the batch of writes it
// sent, if any, without waiting for them:
//
//  1. snapshot: nodes, pods and Allocations from the informer cache, with the process's
//     own Allocation writes that the cache does not show yet in their place (Assumed: the
//     writes must be in it, or GPUs could be promised twice; without Assumed, Allocations
//     straight from the API server), and the writes still in flight as they will leave
//     their Allocations (inflight);
//  2. decide: the configured policy's Schedule;
//  3. validate: sched.Validate; decisions that fail are dropped whole, and so are decisions
//     that touch a job with a write in flight;
//  4. act: the Allocation writes (reservations, then preemptions, then starts, each with
//     the resourceVersion decided on, so a decision on a stale object fails) are prepared
//     and sent in the background; the job and handshake controllers carry them into the
//     jobs and pods.
func (s *Scheduler) cycle(ctx context.Context) (*batch, error) {
	start := time.Now()
	defer func() { s.Metrics.CycleDuration.Observe(time.Since(start).Seconds()) }()
	stage := s.stageTimer(start)

	// 1. Snapshot, after taking the events the controllers observed so far (their writes are
	// in it), which the policy learns before it decides.
	// The fence is read before the snapshot (see Fence).
	events := s.Inbox.take()
	var fence *fenceState
	if s.Fence != nil {
		var err error
		if fence, err = s.Fence.read(ctx); err != nil {
			s.Inbox.requeue(events)
			return nil, err
		}
		stage("fence_read")
	}
	snap, allocs, err := s.snapshot(ctx)
	if err != nil {
		s.Inbox.requeue(events)
		return nil, err
	}
	var othersKept []promise
	if fence != nil {
		othersKept = countPromises(snap, allocs, fence.others)
	}
	s.updateGauges(snap, allocs)
	// 1b. Jobs on a lost node go back to the queue first; the next cycle decides without
	// them.
	if n, err := s.requeueLost(ctx, s.lost); err != nil || n > 0 {
		s.Inbox.requeue(events)
		s.wakeUp()
		return nil, err
	}
	for _, ev := range events {
		s.Observer.Observe(ev)
	}
	s.observeProgress(snap)

	// 2. Decide.
	stage("snapshot") // with the lost nodes' requeue and the events
	d := s.Policy.Schedule(snap)
	log.FromContext(ctx).V(1).Info("cycle", "nodes", len(snap.Nodes), "jobs", len(snap.Jobs),
		"starts", len(d.Starts), "preemptions", len(d.Preemptions), "reservations", len(d.Reservations))
	if len(d.Starts)+len(d.Preemptions)+len(d.Reservations) == 0 {
		stage("decide")
		defer stage("act")
		return nil, s.expireReservations(ctx, snap, allocs)
	}

	// 3. Validate.
	err = sched.Validate(snap, d)
	stage("decide")
	if err != nil {
		s.Metrics.RejectedDecisions.Inc()
		log.FromContext(ctx).Error(err, "policy decisions rejected", "policy", s.Policy.Name())
		return nil, nil
	}
	if job := s.touchesInflight(d); job != "" {
		// Decided on a state that a write in flight is about to change: decide again once
		// the writes end (each batch wakes the scheduler when it ends).
		log.FromContext(ctx).V(1).Info("decisions touch a job with a write in flight; deciding again after it", "allocation", job)
		return nil, nil
	}

	// The promises in flight and this cycle's stay within MaxPromises; a cycle that decided
	// more carries out the first ones, and the next cycle, called when a batch of writes
	// ends, the rest.
	inflightPromises := s.inflight.promises()
	d, _ = limitStarts(d, MaxPromises-len(inflightPromises)-len(othersKept))

	// 4. Act: the writes are sent after the cycle; a batch that promises GPUs first swaps
	// its promises into the fence (see dispatch). The fence carries the promises of this
	// scheduler's writes still in flight too, and the other schedulers' promises that have
	// not landed: another scheduler must count them until they land.
	defer stage("act")
	var sw *swap
	if ps := promisesOf(d, allocs); fence != nil && len(ps) > 0 {
		sw = &swap{read: fence, own: append(ps, inflightPromises...), others: othersKept, mine: ps}
	}
	return s.dispatch(ctx, allocs, d, sw), nil
}

// touchesInflight returns the ID of a job that decisions d touch and that has a write in
// flight, or "".
func (s *Scheduler) touchesInflight(d sched.Decisions) string {
	if s.inflight.len() == 0 {
		return ""
	}
	for _, r := range d.Reservations {
		if s.inflight.has(r.JobID) {
			return r.JobID
		}
	}
	for _, p := range d.Preemptions {
		if s.inflight.has(p.JobID) {
			return p.JobID
		}
	}
	for _, st := range d.Starts {
		if s.inflight.has(st.JobID) {
			return st.JobID
		}
	}
	return ""
}

// stageTimer returns a function that observes, for a stage of the cycle that began at
// start, the time since the previous call (the first: since start).
func (s *Scheduler) stageTimer(start time.Time) func(stage string) {
	last := start
	return func(stage string) {
		now := time.Now()
		s.Metrics.CycleStage.WithLabelValues(stage).Observe(now.Sub(last).Seconds())
		last = now
	}
}

// snapshot builds the scheduling core's snapshot and indexes the Allocations by job ID.
func (s *Scheduler) snapshot(ctx context.Context) (*sched.Snapshot, map[string]*v1alpha1.Allocation, error) {
	// The cycle reads the cached nodes and pods without copying them (it changes neither):
	// copying 1,000 nodes was the largest part of a snapshot's time.
	listNodes := s.Nodes
	if listNodes == nil {
		listNodes = NodeReaderLister(s.Client, client.UnsafeDisableDeepCopy)
	}
	nodes, err := listNodes(ctx)
	if err != nil {
		return nil, nil, err
	}
	// The writes in flight are read before the list: one that ends in between is then shown
	// by both (the list has it as written), never by neither.
	wants := s.inflight.wants()
	items, err := s.listAllocations(ctx)
	if err != nil {
		return nil, nil, err
	}
	overlay(items, wants)
	listPods := s.JobPods
	if listPods == nil {
		listPods = PodReaderLister(s.Client, client.UnsafeDisableDeepCopy)
	}
	pods, err := listPods(ctx)
	if err != nil {
		return nil, nil, err
	}
	byAlloc := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if name, ok := p.Labels[v1alpha1.LabelAllocation]; ok {
			id := p.Namespace + "/" + name
			byAlloc[id] = append(byAlloc[id], p)
		}
	}
	now := s.Clock.Now()
	progress := make(map[string]allocation.PodProgress, len(byAlloc))
	allocs := make(map[string]*v1alpha1.Allocation, len(items))
	ids := make([]string, len(items))
	s.reservationDue = time.Time{}
	for i, a := range items {
		if a.Status.Phase == v1alpha1.AllocationQueued && len(a.Status.Reserved) > 0 && a.Status.ReservedAt != nil {
			due := a.Status.ReservedAt.Add(s.Config.ReservationTimeout.Duration + time.Nanosecond)
			if due.After(now) && (s.reservationDue.IsZero() || due.Before(s.reservationDue)) {
				s.reservationDue = due
			}
		}
		id := allocation.JobID(a)
		ids[i] = id
		allocs[id] = a
		if ps := byAlloc[id]; len(ps) > 0 {
			progress[id] = allocation.ReadProgress(ps)
		}
		if s.reservationExpired(a, now) {
			// a may be the cache's own: the change goes to a copy.
			c := *a
			c.Status.Reserved = nil
			items[i], allocs[id] = &c, &c
		}
	}
	bound := pods
	if listBound := s.BoundPods; listBound != nil || s.Pods != nil {
		if listBound == nil {
			listBound = PodReaderLister(s.Pods, client.UnsafeDisableDeepCopy)
		}
		if bound, err = listBound(ctx); err != nil {
			return nil, nil, err
		}
	}
	view := jobframework.NodeView{GPUResource: corev1.ResourceName(s.Config.GPUResource), GPUProductLabel: s.Config.GPUProductLabel}
	s.progress = progress
	s.lost = onLostNode(allocs, nodes, now, s.Config.NodeLostTimeout.Duration)
	return buildSnapshot(now, nodes, items, ids, bound, progress, view), allocs, nil
}

// listAllocations reads every Allocation: from the cache with the assumed writes in place,
// or from the API server without Assumed.
func (s *Scheduler) listAllocations(ctx context.Context) ([]*v1alpha1.Allocation, error) {
	if s.Assumed == nil {
		return ReaderLister(s.Reader)(ctx)
	}
	cached := s.Allocations
	if cached == nil {
		cached = ReaderLister(s.Client, client.UnsafeDisableDeepCopy)
	}
	return s.Assumed.List(ctx, cached, s.Reader)
}

func (s *Scheduler) reservationExpired(a *v1alpha1.Allocation, now time.Time) bool {
	return a.Status.Phase == v1alpha1.AllocationQueued && len(a.Status.Reserved) > 0 && a.Status.ReservedAt != nil &&
		now.Sub(a.Status.ReservedAt.Time) > s.Config.ReservationTimeout.Duration
}

func (s *Scheduler) updateGauges(snap *sched.Snapshot, allocs map[string]*v1alpha1.Allocation) {
	var used, free int32
	for _, n := range snap.Nodes {
		used += n.Used
		if !n.Unschedulable {
			free += max(0, n.Free())
		}
	}
	s.Metrics.GPUsAllocated.Set(float64(used))
	s.Metrics.GPUsFree.Set(float64(free))
	queued := map[string]int{}
	for _, q := range s.Config.Queues {
		queued[q.Name] = 0
	}
	for _, a := range allocs {
		if a.Status.Phase == v1alpha1.AllocationQueued {
			queued[a.Spec.Queue]++
		}
	}
	for q, n := range queued {
		s.Metrics.QueueLength.WithLabelValues(q).Set(float64(n))
	}
}

// observeProgress tells the observer (a learning policy) about epochs the agents reported
// since the last cycle, with the storage bytes read meanwhile, and about the pods' storage
// read rate: each newer report of a running job's rate becomes a traffic event over the time
// since the previous one (EventTraffic, the predictor's source before the job's first epoch
// ends).
func (s *Scheduler) observeProgress(snap *sched.Snapshot) {
	if s.Observer == nil {
		return
	}
	live := make(map[string]bool, len(snap.Jobs))
	for _, j := range snap.Jobs {
		live[j.ID] = true
		if j.Phase != sched.Running {
			delete(s.seen, j.ID)
			s.rates.Forget(j.ID)
			continue
		}
		prog, ok := s.progress[j.ID]
		if !ok {
			continue
		}
		// seen keeps the progress at the last epoch change, so Bytes spans the epoch.
		last, had := s.seen[j.ID]
		if !had || prog.EpochsDone != last.EpochsDone {
			s.seen[j.ID] = prog
		}
		if had && prog.EpochsDone > last.EpochsDone && prog.EpochTime > 0 {
			// From this cycle's snapshot: delivered at once.
			s.Observer.Observe(sched.Event{Kind: sched.EventEpoch, Time: snap.Now, Job: j, Duration: prog.EpochTime, Bytes: max(0, prog.ReadBytes-last.ReadBytes)})
		}
		if d, bytes, ok := s.rates.Sample(j.ID, prog.Time, prog.ReadRate); ok {
			s.Observer.Observe(sched.Event{Kind: sched.EventTraffic, Time: snap.Now, Job: j, Duration: d, Bytes: bytes})
		}
	}
	s.rates.Retain(live)
	for id := range s.seen {
		if !live[id] {
			delete(s.seen, id)
		}
	}
}
