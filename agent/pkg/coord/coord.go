package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/agent/pkg/api"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// NodeNameField is the pod field the agent selects on; a cached client needs an index on it.
const NodeNameField = "spec.nodeName"

// Coordinator syncs one node's pods with a registry.
type Coordinator struct {
	Client   client.Client
	Node     string
	Registry *api.Registry
	Clock    clock.WithTicker
	Log      logr.Logger
	// Resync is the period of full lists (default 2s).
	Resync time.Duration
	// Nodes, when set, replaces Node: the coordinator acts for every pod whose node it
	// accepts (testbed mode, one agent for many fake nodes), listing pods without a field
	// selector.
	Nodes func(node string) bool
	// OnAck, if set, is told of every acknowledgement (for metrics).
	OnAck func(api.Pod, agentv1alpha1.CheckpointAck)
	// ResumeFallback, if set, gives the resume point of a pod that has no resume annotation
	// (the testbed agent: a pod whose training reloads its newest checkpoint by itself when a
	// scheduler other than PickyMan restarts it); ok false leaves it at the start.
	ResumeFallback func(*corev1.Pod) (rp agentv1alpha1.ResumePoint, ok bool)
	// Counter reads a process's receive counter; nil disables traffic sampling.
	Counter api.CounterFunc
	// ProgressWrites bounds, per second, the patches that carry only progress, over all the
	// node's pods (0: unbounded), so that an agent's API requests at steady state do not
	// grow with its pods or their epochs. A pod's progress held back stays queued (the
	// newest replacing it) until a later Flush has the budget; ProgressBurst (at least 1)
	// may go at once. A patch that carries an acknowledgement is never held back and counts
	// against the budget.
	ProgressWrites float64
	ProgressBurst  int

	mu        sync.Mutex
	pending   map[types.NamespacedName]map[string]string // annotations to write, by pod
	lastProg  map[string]time.Time                       // last progress patch, by UID
	wake      chan struct{}
	budget    *rate.Limiter // ProgressWrites; nil when unbounded
	coalesced int           // progress reports replaced by a newer one before being written
}

var _ api.Hooks = (*Coordinator)(nil)

func (c *Coordinator) init() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[types.NamespacedName]map[string]string{}
		c.lastProg = map[string]time.Time{}
		c.wake = make(chan struct{}, 1)
		if c.ProgressWrites > 0 {
			c.budget = rate.NewLimiter(rate.Limit(c.ProgressWrites), max(c.ProgressBurst, 1))
		}
	}
}

// Sync lists the node's pods and updates the registry: new and changed pods are set, pods
// that are gone, finished or deleting are removed.
func (c *Coordinator) Sync(ctx context.Context) error {
	_, err := c.SyncPods(ctx)
	return err
}

// SyncPods is Sync that also returns the pods it set in the registry.
func (c *Coordinator) SyncPods(ctx context.Context) ([]*corev1.Pod, error) {
	c.init()
	var pods corev1.PodList
	var opts []client.ListOption
	if c.Nodes == nil {
		opts = append(opts, client.MatchingFields{NodeNameField: c.Node})
	}
	if err := c.Client.List(ctx, &pods, opts...); err != nil {
		return nil, fmt.Errorf("list pods of node %s: %w", c.Node, err)
	}
	seen := map[string]bool{}
	var out []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !c.accepts(p.Spec.NodeName) || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		seen[string(p.UID)] = true
		ap := FromPod(c.Log, p)
		if _, ok := p.Annotations[agentv1alpha1.AnnotationResumeFrom]; !ok && c.ResumeFallback != nil {
			if rp, ok := c.ResumeFallback(p); ok {
				ap.Resume = rp
			}
		}
		c.Registry.SetPod(ap)
		out = append(out, p)
	}
	for _, uid := range c.Registry.PodUIDs() {
		if !seen[uid] {
			c.Registry.RemovePod(uid)
			c.mu.Lock()
			delete(c.lastProg, uid)
			c.mu.Unlock()
		}
	}
	return out, nil
}

func (c *Coordinator) accepts(node string) bool {
	if c.Nodes != nil {
		return node != "" && c.Nodes(node)
	}
	return node == c.Node
}

// FromPod reads the registry's view of a pod from its annotations; an annotation that does
// not parse is logged and ignored.
func FromPod(log logr.Logger, p *corev1.Pod) api.Pod {
	out := api.Pod{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name}
	a := p.Annotations
	if v, ok := a[agentv1alpha1.AnnotationCheckpointRequest]; ok {
		var req agentv1alpha1.CheckpointRequest
		if err := json.Unmarshal([]byte(v), &req); err != nil || req.ID == "" || !req.Mode.Valid() {
			log.Info("ignoring a malformed checkpoint request", "pod", out.Key(), "value", v, "error", err)
		} else {
			out.Request = &req
		}
	}
	if v, ok := a[agentv1alpha1.AnnotationCheckpointAck]; ok {
		var ack agentv1alpha1.CheckpointAck
		if err := json.Unmarshal([]byte(v), &ack); err == nil {
			out.AckedID = ack.RequestID
		}
	}
	if v, ok := a[agentv1alpha1.AnnotationResumeFrom]; ok {
		var rp agentv1alpha1.ResumePoint
		if err := json.Unmarshal([]byte(v), &rp); err != nil || rp.Epoch < 0 {
			log.Info("ignoring a malformed resume point", "pod", out.Key(), "value", v, "error", err)
		} else {
			out.Resume = rp
		}
	}
	return out
}

// Acked implements api.Hooks: the acknowledgement and the progress are queued for writing.
func (c *Coordinator) Acked(p api.Pod, ack agentv1alpha1.CheckpointAck) {
	if c.OnAck != nil {
		c.OnAck(p, ack)
	}
	c.queue(p, agentv1alpha1.AnnotationCheckpointAck, ack)
	if prog, ok := c.Registry.Progress(p.UID); ok {
		c.queue(p, agentv1alpha1.AnnotationProgress, prog)
	}
}

// EpochEnded implements api.Hooks.
func (c *Coordinator) EpochEnded(p api.Pod, prog agentv1alpha1.Progress) {
	c.queue(p, agentv1alpha1.AnnotationProgress, prog)
}

func (c *Coordinator) queue(p api.Pod, key string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.Log.Error(err, "encode annotation", "key", key)
		return
	}
	c.Annotate(p, key, string(b))
}

// Annotate queues an annotation for the pod; the next Flush writes it.
func (c *Coordinator) Annotate(p api.Pod, key, value string) {
	c.init()
	c.mu.Lock()
	nn := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	if c.pending[nn] == nil {
		c.pending[nn] = map[string]string{}
	}
	if _, queued := c.pending[nn][key]; queued && key == agentv1alpha1.AnnotationProgress {
		c.coalesced++
	}
	c.pending[nn][key] = value
	if key == agentv1alpha1.AnnotationProgress {
		c.lastProg[p.UID] = c.Clock.Now()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Trigger asks for a sync, a progress refresh and a flush now (a pod of the node changed:
// the agent's informer calls it).
func (c *Coordinator) Trigger() {
	c.init()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Flush writes the queued annotations, one merge patch per pod. Patches that fail stay
// queued (unless the pod is gone) and are retried by the next Flush.
func (c *Coordinator) Flush(ctx context.Context) error {
	c.init()
	c.mu.Lock()
	work := c.pending
	c.pending = map[types.NamespacedName]map[string]string{}
	c.mu.Unlock()
	var firstErr error
	now := c.Clock.Now()
	for nn, ann := range work {
		if c.budget != nil {
			if _, ok := ann[agentv1alpha1.AnnotationProgress]; ok && len(ann) == 1 {
				if !c.budget.AllowN(now, 1) {
					c.requeue(nn, ann)
					continue
				}
			} else {
				c.budget.ReserveN(now, 1)
			}
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = nn.Namespace, nn.Name
		err := c.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
		if err == nil || client.IgnoreNotFound(err) == nil {
			continue
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("patch pod %s: %w", nn, err)
		}
		c.requeue(nn, ann)
	}
	return firstErr
}

// requeue puts annotations that were not written back in the queue, unless a newer value
// of the same key was queued meanwhile.
func (c *Coordinator) requeue(nn types.NamespacedName, ann map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range ann {
		if _, newer := c.pending[nn][k]; !newer {
			if c.pending[nn] == nil {
				c.pending[nn] = map[string]string{}
			}
			c.pending[nn][k] = v
		}
	}
}

// Coalesced returns how many progress reports were replaced by a newer one of the same pod
// before they were written (held back by ProgressWrites, or two epochs ending between two
// flushes).
func (c *Coordinator) Coalesced() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.coalesced
}

// RefreshProgress samples traffic and queues the progress of pods whose last progress patch
// is older than agentv1alpha1.ProgressInterval.
func (c *Coordinator) RefreshProgress() {
	if c.Counter != nil {
		c.Registry.SampleTraffic(c.Counter)
	}
	now := c.Clock.Now()
	for _, uid := range c.Registry.PodUIDs() {
		c.mu.Lock()
		last := c.lastProg[uid]
		c.mu.Unlock()
		if now.Sub(last) < agentv1alpha1.ProgressInterval {
			continue
		}
		prog, ok := c.Registry.Progress(uid)
		pod, known := c.Registry.Pod(uid)
		if ok && known {
			c.queue(pod, agentv1alpha1.AnnotationProgress, prog)
		}
	}
}

// Run syncs, flushes and samples until ctx ends. With a client that can watch, pod events
// trigger a sync at once; with a cached client (NewNodeClient) the informer calls Trigger;
// otherwise changes are seen within Resync.
func (c *Coordinator) Run(ctx context.Context) error {
	c.init()
	resync := c.Resync
	if resync <= 0 {
		resync = 2 * time.Second
	}
	events := make(chan struct{}, 1)
	if wc, ok := c.Client.(client.WithWatch); ok {
		go c.watch(ctx, wc, events)
	}
	tick := c.Clock.NewTicker(resync)
	defer tick.Stop()
	for {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.Log.Error(err, "sync")
		}
		c.RefreshProgress()
		if err := c.Flush(ctx); err != nil && ctx.Err() == nil {
			c.Log.Error(err, "write annotations")
		}
		select {
		case <-ctx.Done():
			// Write what is queued (acknowledgements) before leaving.
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return c.Flush(fctx)
		case <-tick.C():
		case <-events:
		case <-c.wake:
		}
	}
}

// watch signals events on pod changes of the node, re-establishing the watch on errors.
func (c *Coordinator) watch(ctx context.Context, wc client.WithWatch, events chan<- struct{}) {
	for ctx.Err() == nil {
		var opts []client.ListOption
		if c.Nodes == nil {
			opts = append(opts, client.MatchingFields{NodeNameField: c.Node})
		}
		w, err := wc.Watch(ctx, &corev1.PodList{}, opts...)
		if err != nil {
			c.Log.V(1).Info("pod watch failed; relying on resync", "error", err)
			select {
			case <-ctx.Done():
			case <-c.Clock.After(10 * time.Second):
			}
			continue
		}
		for range w.ResultChan() {
			select {
			case events <- struct{}{}:
			default:
			}
		}
		w.Stop()
	}
}
