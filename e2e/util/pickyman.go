package util

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// PodJob is the name of the job a pod belongs to: the training-operator's job-name label on
// a PyTorchJob's pods; for a RayJob's GPU pods (KubeRay labels them with their RayCluster
// only), the job name in the PickyMan Allocation label "rayjob-<name>". "" for other pods.
func PodJob(p *corev1.Pod) string {
	if j := p.Labels[kftraining.JobNameLabel]; j != "" {
		return j
	}
	if a, ok := strings.CutPrefix(p.Labels[pickymanv1.LabelAllocation], "rayjob-"); ok {
		return a
	}
	return ""
}

// Training is what the testbed agent simulates for every pod of a job (trace time).
type Training struct {
	Epochs          int32
	EpochTime       time.Duration
	DatasetBytes    int64
	CheckpointBytes int64
	// Estimate is the run time the user declares (pickyman.dev/estimate), in the operator's
	// (real) time; zero declares none.
	Estimate time.Duration
}

// PickyMan puts the job in a PickyMan queue, names its model, and gives it the training the
// testbed agent simulates; the hints go on the job (for the operator) and on every pod
// template (for the agent).
func (w *PyTorchJobWrapper) PickyMan(queue, model string, t Training) *PyTorchJobWrapper {
	var templates []*corev1.PodTemplateSpec
	for _, r := range w.Spec.PyTorchReplicaSpecs {
		templates = append(templates, &r.Template)
	}
	applyTraining(&w.ObjectMeta, templates, queue, model, t)
	return w
}

// applyTraining labels a job with its queue and model, annotates it with the training hints
// (and the declared run time), and annotates each pod template with the hints and the true
// epoch time the testbed agent simulates.
func applyTraining(job *metav1.ObjectMeta, templates []*corev1.PodTemplateSpec, queue, model string, t Training) {
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[pickymanv1.LabelQueue] = queue
	job.Labels[pickymanv1.LabelModel] = model
	hints := map[string]string{
		pickymanv1.AnnotationEpochs:          strconv.Itoa(int(t.Epochs)),
		pickymanv1.AnnotationDatasetBytes:    strconv.FormatInt(t.DatasetBytes, 10),
		pickymanv1.AnnotationCheckpointBytes: strconv.FormatInt(t.CheckpointBytes, 10),
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	maps.Copy(job.Annotations, hints)
	if t.Estimate > 0 {
		job.Annotations[pickymanv1.AnnotationEstimate] = t.Estimate.String()
	}
	for _, tpl := range templates {
		if tpl.Annotations == nil {
			tpl.Annotations = map[string]string{}
		}
		maps.Copy(tpl.Annotations, hints)
		tpl.Annotations[SimEpochTimeAnnotation] = t.EpochTime.String()
	}
}

// SimEpochTimeAnnotation gives the testbed agent a pod's true epoch time.
const SimEpochTimeAnnotation = "pickyman.dev/sim-epoch-time"

// PodAck returns the checkpoint acknowledgement on a pod, if any.
func PodAck(p *corev1.Pod) (*agentv1alpha1.CheckpointAck, error) {
	return podAnnotation[agentv1alpha1.CheckpointAck](p, agentv1alpha1.AnnotationCheckpointAck)
}

// PodRequest returns the checkpoint request on a pod, if any.
func PodRequest(p *corev1.Pod) (*agentv1alpha1.CheckpointRequest, error) {
	return podAnnotation[agentv1alpha1.CheckpointRequest](p, agentv1alpha1.AnnotationCheckpointRequest)
}

// PodProgress returns the training progress the agent reported on a pod, if any.
func PodProgress(p *corev1.Pod) (*agentv1alpha1.Progress, error) {
	return podAnnotation[agentv1alpha1.Progress](p, agentv1alpha1.AnnotationProgress)
}

// PodResume returns the resume point on a pod, if any.
func PodResume(p *corev1.Pod) (*agentv1alpha1.ResumePoint, error) {
	return podAnnotation[agentv1alpha1.ResumePoint](p, agentv1alpha1.AnnotationResumeFrom)
}

// podAnnotation decodes the JSON value of a pod annotation; nil if the pod has none.
func podAnnotation[T any](p *corev1.Pod, key string) (*T, error) {
	v, ok := p.Annotations[key]
	if !ok {
		return nil, nil
	}
	out := new(T)
	if err := json.Unmarshal([]byte(v), out); err != nil {
		return nil, fmt.Errorf("pod %s: %s: %w", p.Name, key, err)
	}
	return out, nil
}

// GPUWatcher watches every pod and Allocation and records each moment a node is promised
// more GPUs than it has: by the pods bound to it that have not ended (a pod being deleted still
// holds its GPUs), and by the placements of the Allocations that hold GPUs.
type GPUWatcher struct {
	mu         sync.Mutex
	capacity   map[string]int64            // node -> GPUs
	pods       map[string]podGPUs          // ns/name -> node, GPUs
	allocs     map[string]map[string]int64 // ns/name -> node -> GPUs
	violations []string
	events     int
	history    map[string]*PodRecord // by pod UID
	// preempting is when each Allocation (namespace/name) was first seen Preempting, per
	// preemption number.
	preempting map[string]map[int32]time.Time
	// podObjs is the last state seen of every pod that exists, for a relist that misses it.
	podObjs map[string]*corev1.Pod
	// phases is the last phase of every Allocation, and phaseSeen the times one changed.
	phases    map[string]pickymanv1.AllocationPhase
	phaseSeen []time.Time
	// progressSeen are the times the agent's progress report of some pod was seen to change.
	progressSeen []time.Time
	// live and maxLive count, per job (namespace/job name), the pods that exist and have not
	// ended, now and at most.
	live, maxLive map[string]int
}

// PodRecord is what the watcher saw of one pod (one UID: a pod recreated under the same name
// is a new record), with the local time of each first sighting; watch events of one object
// arrive in order, so the times order the changes.
type PodRecord struct {
	Namespace, Name, Job, Node string
	Created                    time.Time
	// Requests are the distinct checkpoint request ids the pod carried, in order.
	Requests []string
	Request  *agentv1alpha1.CheckpointRequest
	Ack      *agentv1alpha1.CheckpointAck
	Resume   *agentv1alpha1.ResumePoint
	// FirstProgress and Progress are the first and the last progress the agent reported.
	FirstProgress, Progress                      *agentv1alpha1.Progress
	RequestSeen, AckSeen, DeletingSeen, GoneSeen time.Time
	Phase                                        corev1.PodPhase
	live                                         bool
}

type podGPUs struct {
	node string
	gpus int64
}

// WatchGPUs starts a watcher until ctx ends. Nodes are read at the start and on every pod
// event for a node not seen before; an Allocation on a node not yet seen is checked once the
// node is. Pods and Allocations are each listed, then watched from the list's resource
// version; when a watch ends (the API server restarted) they are listed again and the list
// replaces what was known at once, before any node is checked, so that a relist is judged as
// the one consistent state it is.
func WatchGPUs(ctx context.Context, kube kubernetes.Interface, c client.WithWatch) (*GPUWatcher, error) {
	w := newGPUWatcher()
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		q := n.Status.Allocatable[cluster.GPUResource]
		w.capacity[n.Name] = q.Value()
	}
	pods := lister[*corev1.Pod]{
		list: func(ctx context.Context) ([]*corev1.Pod, string, error) {
			l, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			out := make([]*corev1.Pod, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return kube.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
		snapshot: func(items []*corev1.Pod) { w.podSnapshot(ctx, kube, items) },
		event:    func(t watch.EventType, p *corev1.Pod) { w.pod(ctx, kube, t, p) },
	}
	allocs := lister[*pickymanv1.Allocation]{
		list: func(ctx context.Context) ([]*pickymanv1.Allocation, string, error) {
			l := &pickymanv1.AllocationList{}
			if err := c.List(ctx, l); err != nil {
				return nil, "", err
			}
			out := make([]*pickymanv1.Allocation, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return c.Watch(ctx, &pickymanv1.AllocationList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		},
		snapshot: w.allocSnapshot,
		event:    w.alloc,
	}
	// The first lists are the caller's: an error there is returned.
	podRV, err := pods.relist(ctx)
	if err != nil {
		return nil, err
	}
	allocRV, err := allocs.relist(ctx)
	if err != nil {
		return nil, err
	}
	go pods.run(ctx, podRV)
	go allocs.run(ctx, allocRV)
	return w, nil
}

func newGPUWatcher() *GPUWatcher {
	return &GPUWatcher{capacity: map[string]int64{}, pods: map[string]podGPUs{}, allocs: map[string]map[string]int64{},
		history: map[string]*PodRecord{}, preempting: map[string]map[int32]time.Time{},
		live: map[string]int{}, maxLive: map[string]int{}, podObjs: map[string]*corev1.Pod{}, phases: map[string]pickymanv1.AllocationPhase{}}
}

// lister lists and watches one kind of object for the watcher.
type lister[T runtime.Object] struct {
	list     func(context.Context) ([]T, string, error)
	watch    func(context.Context, string) (watch.Interface, error)
	snapshot func([]T)
	event    func(watch.EventType, T)
}

func (l lister[T]) relist(ctx context.Context) (string, error) {
	items, rv, err := l.list(ctx)
	if err != nil {
		return "", err
	}
	l.snapshot(items)
	return rv, nil
}

// run watches from rv until ctx ends; when the watch ends or fails it lists again, retrying
// every half second while the API server does not answer.
func (l lister[T]) run(ctx context.Context, rv string) {
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = l.relist(ctx); err != nil {
				_ = Sleep(ctx, 500*time.Millisecond)
				continue
			}
		}
		rv = l.follow(ctx, rv)
	}
}

// follow passes on the events of one watch from rv and returns the last resource version it
// saw, or "" when the watch must start again from a new list (it failed, or the version is
// too old).
func (l lister[T]) follow(ctx context.Context, rv string) string {
	wi, err := l.watch(ctx, rv)
	if err != nil {
		_ = Sleep(ctx, 500*time.Millisecond)
		return ""
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Error:
				return ""
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
				continue
			}
			if o, ok := ev.Object.(T); ok {
				l.event(ev.Type, o)
				if m, err := meta.Accessor(o); err == nil {
					rv = m.GetResourceVersion()
				}
			}
		}
	}
}

// Sleep waits d, or returns the context's error if it ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (w *GPUWatcher) fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, msg)
}

// podGPUsOf are the GPUs a pod's containers ask for, and whether it has ended.
func podGPUsOf(p *corev1.Pod) (gpus int64, ended bool) {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[cluster.GPUResource]; ok {
			gpus += q.Value()
		}
	}
	return gpus, p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// learnNode reads the GPU capacity of a node not seen before.
func (w *GPUWatcher) learnNode(ctx context.Context, kube kubernetes.Interface, node string) {
	if node == "" {
		return
	}
	w.mu.Lock()
	_, known := w.capacity[node]
	w.mu.Unlock()
	if known {
		return
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	switch {
	case err == nil:
		q := n.Status.Allocatable[cluster.GPUResource]
		w.mu.Lock()
		w.capacity[node] = q.Value()
		w.mu.Unlock()
	case !apierrors.IsNotFound(err):
		w.fail(fmt.Sprintf("get node %s: %v", node, err))
	}
}

func (w *GPUWatcher) pod(ctx context.Context, kube kubernetes.Interface, t watch.EventType, p *corev1.Pod) {
	if gpus, _ := podGPUsOf(p); gpus > 0 {
		w.learnNode(ctx, kube, p.Spec.NodeName)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if node := w.applyPod(t, p); node != "" {
		w.checkPods(node, p.Namespace+"/"+p.Name)
	}
}

// podSnapshot replaces what is known of pods with a list: the pods missing from it are gone,
// the others changed; then every node is checked once.
func (w *GPUWatcher) podSnapshot(ctx context.Context, kube kubernetes.Interface, items []*corev1.Pod) {
	for _, p := range items {
		if gpus, _ := podGPUsOf(p); gpus > 0 {
			w.learnNode(ctx, kube, p.Spec.NodeName)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	listed := map[string]bool{}
	for _, p := range items {
		listed[p.Namespace+"/"+p.Name] = true
	}
	for key, p := range w.podObjs {
		if !listed[key] {
			w.applyPod(watch.Deleted, p)
		}
	}
	for _, p := range items {
		w.applyPod(watch.Modified, p)
	}
	nodes := map[string]bool{}
	for _, pg := range w.pods {
		nodes[pg.node] = true
	}
	for node := range nodes {
		w.checkPods(node, "after a relist")
	}
}

// applyPod records a pod event and returns the node whose GPUs it now holds ("" if none); the
// caller holds w.mu.
func (w *GPUWatcher) applyPod(t watch.EventType, p *corev1.Pod) string {
	key := p.Namespace + "/" + p.Name
	gpus, ended := podGPUsOf(p)
	node := p.Spec.NodeName
	w.events++
	w.record(p)
	w.countLive(t, p, ended)
	if t == watch.Deleted {
		delete(w.podObjs, key)
		if r := w.history[string(p.UID)]; r != nil && r.GoneSeen.IsZero() {
			r.GoneSeen = time.Now()
		}
	} else {
		w.podObjs[key] = p
	}
	if t == watch.Deleted || ended || node == "" || gpus == 0 {
		delete(w.pods, key)
		return ""
	}
	w.pods[key] = podGPUs{node: node, gpus: gpus}
	return node
}

// checkPods records a violation if the pods bound to node ask for more GPUs than it has; the
// caller holds w.mu.
func (w *GPUWatcher) checkPods(node, what string) {
	var used int64
	for _, pg := range w.pods {
		if pg.node == node {
			used += pg.gpus
		}
	}
	if c, ok := w.capacity[node]; ok && used > c {
		w.violations = append(w.violations, fmt.Sprintf("%s: node %s has pods for %d GPUs of %d (pod %s)",
			time.Now().Format(time.RFC3339Nano), node, used, c, what))
	}
}

func (w *GPUWatcher) alloc(t watch.EventType, a *pickymanv1.Allocation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, node := range w.applyAlloc(t, a) {
		w.checkAllocs(node, a.Namespace+"/"+a.Name)
	}
}

// allocSnapshot replaces what is known of Allocations with a list, then checks every node once.
func (w *GPUWatcher) allocSnapshot(items []*pickymanv1.Allocation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	listed := map[string]bool{}
	for _, a := range items {
		listed[a.Namespace+"/"+a.Name] = true
	}
	for key := range w.allocs {
		if !listed[key] {
			delete(w.allocs, key)
		}
	}
	for _, a := range items {
		w.applyAlloc(watch.Modified, a)
	}
	nodes := map[string]bool{}
	for _, m := range w.allocs {
		for node := range m {
			nodes[node] = true
		}
	}
	for node := range nodes {
		w.checkAllocs(node, "after a relist")
	}
}

// applyAlloc records an Allocation event and returns the nodes it now holds GPUs on; the
// caller holds w.mu.
func (w *GPUWatcher) applyAlloc(t watch.EventType, a *pickymanv1.Allocation) []string {
	key := a.Namespace + "/" + a.Name
	w.events++
	if a.Status.Phase == pickymanv1.AllocationPreempting {
		m := w.preempting[key]
		if m == nil {
			m = map[int32]time.Time{}
			w.preempting[key] = m
		}
		if _, ok := m[a.Status.Preemptions]; !ok {
			m[a.Status.Preemptions] = time.Now()
		}
	}
	if old, ok := w.phases[key]; !ok || old != a.Status.Phase {
		w.phases[key] = a.Status.Phase
		w.phaseSeen = append(w.phaseSeen, time.Now())
	}
	holds := a.Status.Phase == pickymanv1.AllocationAdmitted || a.Status.Phase == pickymanv1.AllocationPreempting ||
		a.Status.Phase == pickymanv1.AllocationSuspended
	if t == watch.Deleted || !holds {
		delete(w.allocs, key)
		return nil
	}
	byNode := map[string]int64{}
	for _, p := range a.Status.Placement {
		byNode[p.Node] += int64(p.GPUs)
	}
	w.allocs[key] = byNode
	return slices.Collect(maps.Keys(byNode))
}

// checkAllocs records a violation if the Allocations place more GPUs on node than it has; the
// caller holds w.mu.
func (w *GPUWatcher) checkAllocs(node, what string) {
	var used int64
	for _, m := range w.allocs {
		used += m[node]
	}
	if c, ok := w.capacity[node]; ok && used > c {
		w.violations = append(w.violations, fmt.Sprintf("%s: node %s has placements for %d GPUs of %d (allocation %s)",
			time.Now().Format(time.RFC3339Nano), node, used, c, what))
	}
}

// countLive tracks the pods of each job that exist and have not ended; the caller holds w.mu.
func (w *GPUWatcher) countLive(t watch.EventType, p *corev1.Pod, ended bool) {
	job := PodJob(p)
	if job == "" {
		return
	}
	r := w.history[string(p.UID)]
	isLive := t != watch.Deleted && !ended
	if r.live != isLive {
		r.live = isLive
		key := p.Namespace + "/" + job
		if isLive {
			w.live[key]++
			w.maxLive[key] = max(w.maxLive[key], w.live[key])
		} else {
			w.live[key]--
		}
	}
}

// MaxLivePods is the most pods of a job that existed at once without having ended: more than
// the job's replicas means it ran twice at the same time.
func (w *GPUWatcher) MaxLivePods(ns, job string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxLive[ns+"/"+job]
}

// record updates the pod's history; the caller holds w.mu.
func (w *GPUWatcher) record(p *corev1.Pod) {
	r := w.history[string(p.UID)]
	if r == nil {
		r = &PodRecord{Namespace: p.Namespace, Name: p.Name, Job: PodJob(p), Created: time.Now()}
		w.history[string(p.UID)] = r
	}
	r.Node, r.Phase = p.Spec.NodeName, p.Status.Phase
	if req, err := PodRequest(p); err == nil && req != nil {
		r.Request = req
		if r.RequestSeen.IsZero() {
			r.RequestSeen = time.Now()
		}
		if n := len(r.Requests); n == 0 || r.Requests[n-1] != req.ID {
			r.Requests = append(r.Requests, req.ID)
		}
	}
	if ack, err := PodAck(p); err == nil && ack != nil {
		if r.Ack == nil {
			r.AckSeen = time.Now()
		}
		r.Ack = ack
	}
	if rp, err := PodResume(p); err == nil && rp != nil {
		r.Resume = rp
	}
	if pr, err := PodProgress(p); err == nil && pr != nil {
		if r.FirstProgress == nil {
			r.FirstProgress = pr
		}
		if r.Progress == nil || *r.Progress != *pr {
			w.progressSeen = append(w.progressSeen, time.Now())
		}
		r.Progress = pr
	}
	if p.DeletionTimestamp != nil && r.DeletingSeen.IsZero() {
		r.DeletingSeen = time.Now()
	}
}

// History returns a copy of the records of the pods of a job in a namespace, oldest first.
func (w *GPUWatcher) History(ns, job string) []PodRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []PodRecord
	for _, r := range w.history {
		if r.Namespace == ns && r.Job == job {
			c := *r
			c.Requests = append([]string(nil), r.Requests...)
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// ProgressAfter is the first time after t that the agent's progress report of any pod was
// seen to change (zero if none has since).
func (w *GPUWatcher) ProgressAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return firstAfter(w.progressSeen, t)
}

// PhaseChangeAfter is the first time after t that an Allocation was seen to change phase
// (zero if none has since).
func (w *GPUWatcher) PhaseChangeAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return firstAfter(w.phaseSeen, t)
}

// firstAfter is the first of the ascending times after t, or zero.
func firstAfter(times []time.Time, t time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(times, t, func(a, b time.Time) int { return a.Compare(b) })
	for ; i < len(times); i++ {
		if times[i].After(t) {
			return times[i]
		}
	}
	return time.Time{}
}

// PreemptingSeen is when the watcher first saw the Allocation Preempting for its n-th
// preemption (zero if never).
func (w *GPUWatcher) PreemptingSeen(ns, name string, n int32) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.preempting[ns+"/"+name][n]
}

// Violations returns every over-commitment seen so far and how many events were checked.
func (w *GPUWatcher) Violations() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...), w.events
}

// LineCounter passes what is written to it on to w and keeps the writes that contain one of
// its substrings (a replay's progress writes one line at a time).
type LineCounter struct {
	w       io.Writer
	substrs []string
	mu      sync.Mutex
	lines   map[string][]string
}

// NewLineCounter keeps the lines with any of substrs written through it to w.
func NewLineCounter(w io.Writer, substrs ...string) *LineCounter {
	return &LineCounter{w: w, substrs: substrs, lines: map[string][]string{}}
}

func (c *LineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	for _, s := range c.substrs {
		if bytes.Contains(p, []byte(s)) {
			c.lines[s] = append(c.lines[s], strings.TrimSpace(string(p)))
		}
	}
	c.mu.Unlock()
	return c.w.Write(p)
}

// Lines are the writes that contained substr.
func (c *LineCounter) Lines(substr string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines[substr])
}
