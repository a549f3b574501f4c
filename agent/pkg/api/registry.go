package api

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/pickyman/pickyman/agent/pkg/protocol"
	"github.com/pickyman/pickyman/agent/pkg/traffic"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// Pod is what the coordinator knows about a training pod on the node.
type Pod struct {
	UID       string
	Namespace string
	Name      string
	// Resume is the point the pod's training starts from.
	Resume agentv1alpha1.ResumePoint
	// Request is the operator's pending checkpoint request, nil if none.
	Request *agentv1alpha1.CheckpointRequest
	// AckedID is the id of the request the pod has already acknowledged (from its ack
	// annotation); a request with this id is not forwarded again.
	AckedID string
}

// Key is the pod's "namespace/name".
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// Hooks receives what the registry learns; calls are made without the registry's lock held
// and must not block for long.
type Hooks interface {
	// Acked is called once every registered rank of the pod reported its checkpoint for
	// the pod's current request.
	Acked(pod Pod, ack agentv1alpha1.CheckpointAck)
	// EpochEnded is called when rank 0 of a pod (or the lowest registered rank) ends an epoch.
	EpochEnded(pod Pod, p agentv1alpha1.Progress)
}

// NopHooks ignores everything.
type NopHooks struct{}

func (NopHooks) Acked(Pod, agentv1alpha1.CheckpointAck) {}
func (NopHooks) EpochEnded(Pod, agentv1alpha1.Progress) {}

// Error is a failed call: a code and a message for the caller.
type Error struct {
	Code protocol.ErrorCode
	Msg  string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Msg }

func errf(code protocol.ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// rankState is one rank's session.
type rankState struct {
	rank, world int32
	pid         int32
	session     uint64 // connection that owns the rank
	inEpoch     bool
	epoch       int32 // epoch in progress, or last begun
	lastEnded   int32 // last epoch ended, -1 if none
	epochStart  time.Time
	reported    *agentv1alpha1.CheckpointAck // report for the current request
}

// next is the epoch the rank would resume from if it checkpointed now.
func (r *rankState) next(resume int32) int32 {
	if r.lastEnded >= 0 {
		return r.lastEnded + 1
	}
	return resume
}

type podState struct {
	pod     Pod
	reqSeen time.Time // when the current request reached the agent
	ranks   map[int32]*rankState
	acked   bool // the current request was acknowledged
	// changed is closed and replaced when a new request arrives, to wake pollers.
	changed chan struct{}

	// Progress.
	epochSeconds  float64
	reportedBytes int64
	est           *traffic.Estimator
}

// Registry is the state of the node's training pods. It is safe for concurrent use.
type Registry struct {
	clock clock.Clock
	hooks Hooks

	mu   sync.Mutex
	pods map[string]*podState // by UID
}

// NewRegistry returns an empty registry.
func NewRegistry(c clock.Clock, h Hooks) *Registry {
	if h == nil {
		h = NopHooks{}
	}
	return &Registry{clock: c, hooks: h, pods: map[string]*podState{}}
}

// SetPod adds or updates a pod. A new request (an id that differs from the current one and
// from the acknowledged one) wakes the pod's pollers; ranks keep their state.
func (r *Registry) SetPod(p Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.pods[p.UID]
	if !ok {
		st = &podState{ranks: map[int32]*rankState{}, changed: make(chan struct{}), est: traffic.NewEstimator(traffic.Config{})}
		r.pods[p.UID] = st
	}
	oldID := ""
	if st.pod.Request != nil {
		oldID = st.pod.Request.ID
	}
	st.pod = p
	if p.Request != nil && p.Request.ID == p.AckedID {
		st.acked = true
	}
	if p.Request != nil && p.Request.ID != oldID && p.Request.ID != p.AckedID {
		st.reqSeen = r.clock.Now()
		st.acked = false
		for _, rk := range st.ranks {
			rk.reported = nil
		}
		close(st.changed)
		st.changed = make(chan struct{})
	}
}

// RemovePod forgets a pod (deleted or moved off the node).
func (r *Registry) RemovePod(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.pods[uid]; ok {
		close(st.changed)
		delete(r.pods, uid)
	}
}

// PodUIDs lists the pods the registry holds.
func (r *Registry) PodUIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	uids := make([]string, 0, len(r.pods))
	for uid := range r.pods {
		uids = append(uids, uid)
	}
	return uids
}

// Caller is an authenticated connection: the pod its peer process belongs to.
type Caller struct {
	Session uint64
	PID     int32
	PodUID  string
}

// pod returns the caller's pod state or an unknown-pod error. r.mu must be held.
func (r *Registry) pod(c Caller) (*podState, *Error) {
	st, ok := r.pods[c.PodUID]
	if !ok {
		return nil, errf(protocol.ErrUnknownPod, "the calling process (pid %d, pod UID %q) does not belong to a training pod on this node", c.PID, c.PodUID)
	}
	return st, nil
}

// rank returns the rank bound to the caller's session.
func (r *Registry) rank(c Caller, st *podState) (*rankState, *Error) {
	for _, rk := range st.ranks {
		if rk.session == c.Session {
			return rk, nil
		}
	}
	return nil, errf(protocol.ErrOutOfOrder, "register first")
}

// Register binds the caller's session to a rank of its pod and returns the resume point. The
// pod is the peer's; pod, if not empty, must name it ("namespace/name").
func (r *Registry) Register(c Caller, pod string, rank, world int32) (agentv1alpha1.ResumePoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.pod(c)
	if err != nil {
		return agentv1alpha1.ResumePoint{}, err
	}
	if pod != "" && pod != st.pod.Key() {
		return agentv1alpha1.ResumePoint{}, errf(protocol.ErrForbidden, "the calling process belongs to pod %s, not %q", st.pod.Key(), pod)
	}
	if world < 1 || rank < 0 || rank >= world {
		return agentv1alpha1.ResumePoint{}, errf(protocol.ErrMalformed, "rank %d of world size %d", rank, world)
	}
	if _, e := r.rank(c, st); e == nil {
		return agentv1alpha1.ResumePoint{}, errf(protocol.ErrOutOfOrder, "this connection is already registered")
	}
	for _, rk := range st.ranks {
		if rk.world != world {
			return agentv1alpha1.ResumePoint{}, errf(protocol.ErrMalformed, "world size %d differs from rank %d's %d", world, rk.rank, rk.world)
		}
	}
	if old, ok := st.ranks[rank]; ok && old.session != 0 {
		return agentv1alpha1.ResumePoint{}, errf(protocol.ErrOutOfOrder, "rank %d is already registered by another live connection", rank)
	}
	st.ranks[rank] = &rankState{rank: rank, world: world, pid: c.PID, session: c.Session, lastEnded: -1, epoch: -1}
	return st.pod.Resume, nil
}

// Disconnect releases the caller's rank so that a restarted process may register it again.
func (r *Registry) Disconnect(c Caller) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.pods[c.PodUID]; ok {
		if rk, err := r.rank(c, st); err == nil {
			rk.session = 0
		}
	}
}

// EpochBegin records the start of an epoch.
func (r *Registry) EpochBegin(c Caller, epoch int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, rk, err := r.registered(c)
	if err != nil {
		return err
	}
	if rk.inEpoch {
		return errf(protocol.ErrOutOfOrder, "epoch %d has not ended", rk.epoch)
	}
	if want := rk.next(st.pod.Resume.Epoch); epoch != want {
		return errf(protocol.ErrOutOfOrder, "epoch %d begun, want epoch %d", epoch, want)
	}
	rk.inEpoch, rk.epoch, rk.epochStart = true, epoch, r.clock.Now()
	return nil
}

// EpochEnd records the end of the epoch in progress: samples processed and bytes read.
func (r *Registry) EpochEnd(c Caller, epoch int32, samples, bytes int64) error {
	r.mu.Lock()
	st, rk, err := r.registered(c)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if !rk.inEpoch || rk.epoch != epoch {
		r.mu.Unlock()
		return errf(protocol.ErrOutOfOrder, "epoch %d ended but it is not in progress", epoch)
	}
	if samples < 0 || bytes < 0 {
		r.mu.Unlock()
		return errf(protocol.ErrMalformed, "negative samples or bytes")
	}
	rk.inEpoch, rk.lastEnded = false, epoch
	st.reportedBytes += bytes
	var notify bool
	var prog agentv1alpha1.Progress
	if lowestRank(st) == rk {
		st.epochSeconds = r.clock.Since(rk.epochStart).Seconds()
		notify, prog = true, r.progress(st)
	}
	pod := st.pod
	r.mu.Unlock()
	if notify {
		r.hooks.EpochEnded(pod, prog)
	}
	return nil
}

// Poll returns the pod's pending checkpoint request that the caller has not reported yet,
// waiting up to wait for one.
func (r *Registry) Poll(ctx context.Context, c Caller, wait time.Duration) (*agentv1alpha1.CheckpointRequest, error) {
	if wait < 0 || wait > protocol.MaxWait {
		return nil, errf(protocol.ErrMalformed, "wait must be within 0..%v", protocol.MaxWait)
	}
	var timer clock.Timer
	for {
		r.mu.Lock()
		st, rk, err := r.registered(c)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		if req := st.pod.Request; req != nil && !st.acked && rk.reported == nil && req.ID != st.pod.AckedID {
			cp := *req
			r.mu.Unlock()
			return &cp, nil
		}
		ch := st.changed
		r.mu.Unlock()
		if wait == 0 {
			return nil, nil
		}
		if timer == nil {
			timer = r.clock.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C():
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// CheckpointDone records the caller's checkpoint for the pod's current request. Once every
// registered rank of the pod has reported, the pod is acknowledged through Hooks.Acked.
func (r *Registry) CheckpointDone(c Caller, id string, epoch int32, path string, bytes int64, seconds float64) error {
	r.mu.Lock()
	st, rk, err := r.registered(c)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	req := st.pod.Request
	switch {
	case req == nil || st.acked:
		err = errf(protocol.ErrOutOfOrder, "no checkpoint request is pending")
	case id != req.ID:
		err = errf(protocol.ErrOutOfOrder, "request %q is not the pending request %q", id, req.ID)
	case rk.reported != nil:
		err = errf(protocol.ErrOutOfOrder, "rank %d already reported request %q", rk.rank, id)
	case bytes < 0 || seconds < 0:
		err = errf(protocol.ErrMalformed, "negative bytes or seconds")
	case req.Mode == agentv1alpha1.ModeBoundary && rk.inEpoch:
		err = errf(protocol.ErrOutOfOrder, "boundary checkpoint reported inside epoch %d; end the epoch first", rk.epoch)
	case req.Mode == agentv1alpha1.ModeBoundary && epoch != rk.next(st.pod.Resume.Epoch):
		err = errf(protocol.ErrOutOfOrder, "boundary checkpoint resumes from epoch %d, but the next epoch is %d", epoch, rk.next(st.pod.Resume.Epoch))
	case req.Mode == agentv1alpha1.ModeNow && (epoch > rk.next(st.pod.Resume.Epoch) || epoch < st.pod.Resume.Epoch):
		err = errf(protocol.ErrOutOfOrder, "checkpoint resumes from epoch %d, outside %d..%d", epoch, st.pod.Resume.Epoch, rk.next(st.pod.Resume.Epoch))
	}
	if err != nil {
		r.mu.Unlock()
		return err
	}
	for _, o := range st.ranks {
		if o.reported != nil && o.reported.Epoch != epoch {
			r.mu.Unlock()
			return errf(protocol.ErrOutOfOrder, "rank %d checkpointed epoch %d, rank %d epoch %d", o.rank, o.reported.Epoch, rk.rank, epoch)
		}
	}
	rk.reported = &agentv1alpha1.CheckpointAck{RequestID: id, Epoch: epoch, Path: path, Bytes: bytes, Seconds: seconds}
	ack, done := r.ackIfComplete(st)
	pod := st.pod
	r.mu.Unlock()
	if done {
		r.hooks.Acked(pod, ack)
	}
	return nil
}

// ackIfComplete combines the ranks' reports once all registered ranks reported. r.mu held.
func (r *Registry) ackIfComplete(st *podState) (agentv1alpha1.CheckpointAck, bool) {
	var ack agentv1alpha1.CheckpointAck
	for _, rk := range st.ranks {
		if rk.reported == nil {
			return ack, false
		}
		rep := rk.reported
		ack.RequestID, ack.Epoch = rep.RequestID, rep.Epoch
		if ack.Path == "" || rk.rank == 0 && rep.Path != "" {
			ack.Path = rep.Path
		}
		ack.Bytes += rep.Bytes
		ack.Seconds = max(ack.Seconds, rep.Seconds)
	}
	now := r.clock.Now()
	ack.Time = now
	ack.SuspendSeconds = now.Sub(st.reqSeen).Seconds()
	st.acked = true
	st.pod.AckedID = ack.RequestID
	return ack, true
}

// ResumePoint returns the pod's resume point.
func (r *Registry) ResumePoint(c Caller) (agentv1alpha1.ResumePoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, _, err := r.registered(c)
	if err != nil {
		return agentv1alpha1.ResumePoint{}, err
	}
	return st.pod.Resume, nil
}

func (r *Registry) registered(c Caller) (*podState, *rankState, error) {
	st, err := r.pod(c)
	if err != nil {
		return nil, nil, err
	}
	rk, err := r.rank(c, st)
	if err != nil {
		return nil, nil, err
	}
	return st, rk, nil
}

func lowestRank(st *podState) *rankState {
	var low *rankState
	for _, rk := range st.ranks {
		if low == nil || rk.rank < low.rank {
			low = rk
		}
	}
	return low
}

// Pod returns the registry's view of a pod.
func (r *Registry) Pod(uid string) (Pod, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.pods[uid]
	if !ok {
		return Pod{}, false
	}
	return st.pod, true
}
