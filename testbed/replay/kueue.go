package replay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// Schedulers a replay's jobs can be admitted by (Options.Scheduler).
const (
	// SchedulerPickyMan: PickyMan's operator admits the jobs (they name a PickyMan queue).
	SchedulerPickyMan = "pickyman"
	// SchedulerKueue: real Kueue admits the jobs (they name a Kueue LocalQueue and carry no
	// PickyMan queue label, so PickyMan's operator, if it runs, leaves them alone).
	SchedulerKueue = "kueue"
)

// Schedulers lists the values of Options.Scheduler.
func Schedulers() []string { return []string{SchedulerPickyMan, SchedulerKueue} }

// Kueue's labels on a job, and the names of the replay's Kueue objects.
const (
	KueueLabelQueue    = "kueue.x-k8s.io/queue-name"
	KueueLabelPriority = "kueue.x-k8s.io/priority-class"
	// KueueClusterQueue is the one ClusterQueue of a replay; KueueLocalQueue is the
	// LocalQueue in the replay's namespace that points to it.
	KueueClusterQueue = "pickyman-replay"
	KueueLocalQueue   = "replay"
	// AnnotationResumeLatest asks the testbed agent to start a pod from the newest
	// checkpoint it saw the pod write (agentsim.AnnotationResumeLatest, which it equals).
	AnnotationResumeLatest = "pickyman.dev/sim-resume-latest"
)

var (
	kueueGroup    = "kueue.x-k8s.io"
	kueueVersion  = "v1beta2"
	workloadsGVR  = schema.GroupVersionResource{Group: kueueGroup, Version: kueueVersion, Resource: "workloads"}
	kueueAPI      = kueueGroup + "/" + kueueVersion
	kueueResource = map[string]string{
		"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
		"LocalQueue": "localqueues", "WorkloadPriorityClass": "workloadpriorityclasses",
	}
)

// KueueFlavor is one GPU model of the cluster as a Kueue ResourceFlavor: its GPUs are the
// ClusterQueue's quota of the flavor, and its node label the GPU product's.
type KueueFlavor struct {
	Model   string
	Product string
	GPUs    int32
}

// KueueFlavors are the flavors of a cluster: one per GPU model, in the pools' order, models
// that name none taking def.
func KueueFlavors(c traces.Cluster, def string) []KueueFlavor {
	var out []KueueFlavor
	for _, p := range c.Pools {
		model := cmp.Or(p.GPUModel, def)
		i := slices.IndexFunc(out, func(f KueueFlavor) bool { return f.Model == model })
		if i < 0 {
			out = append(out, KueueFlavor{Model: model, Product: cluster.LookupGPUModel(model).Product})
			i = len(out) - 1
		}
		out[i].GPUs += int32(p.Count) * p.GPUs
	}
	return out
}

// flavorName is the ResourceFlavor of a GPU model.
func flavorName(model string) string { return "gpu-" + QueueName(model) }

// KueueObjects are the Kueue objects a replay needs: a ResourceFlavor per GPU model, one
// ClusterQueue that holds the cluster's GPUs and preempts lower priorities within itself
// (withinClusterQueue: LowerPriority, BestEffortFIFO), the LocalQueue of the namespace, and a
// WorkloadPriorityClass per nonzero trace priority.
func KueueObjects(jobs []traces.Job, ns string, flavors []KueueFlavor) []*unstructured.Unstructured {
	obj := func(kind, name, namespace string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": kueueAPI, "kind": kind,
			"metadata": map[string]any{"name": name}}}
		if namespace != "" {
			u.SetNamespace(namespace)
		}
		for k, v := range spec {
			u.Object[k] = v
		}
		return u
	}
	var out []*unstructured.Unstructured
	var quotas []any
	for _, f := range flavors {
		out = append(out, obj("ResourceFlavor", flavorName(f.Model), "", map[string]any{"spec": map[string]any{
			"nodeLabels": map[string]any{cluster.LabelGPUProduct: f.Product}}}))
		quotas = append(quotas, map[string]any{"name": flavorName(f.Model), "resources": []any{
			map[string]any{"name": string(cluster.GPUResource), "nominalQuota": int64(f.GPUs)}}})
	}
	out = append(out, obj("ClusterQueue", KueueClusterQueue, "", map[string]any{"spec": map[string]any{
		"namespaceSelector": map[string]any{},
		"queueingStrategy":  "BestEffortFIFO",
		"preemption":        map[string]any{"withinClusterQueue": "LowerPriority"},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{string(cluster.GPUResource)},
			"flavors":          quotas,
		}},
	}}))
	out = append(out, obj("LocalQueue", KueueLocalQueue, ns, map[string]any{"spec": map[string]any{"clusterQueue": KueueClusterQueue}}))
	seen := map[int32]bool{}
	for _, j := range jobs {
		if j.Priority == 0 || seen[j.Priority] {
			continue
		}
		seen[j.Priority] = true
		out = append(out, obj("WorkloadPriorityClass", PriorityClassName(j.Priority), "", map[string]any{
			"value": int64(j.Priority), "description": fmt.Sprintf("PickyMan trace replay: the jobs of trace priority %d", j.Priority)}))
	}
	return out
}

// ForKueue turns a replay's PyTorchJob into one that Kueue admits: the LocalQueue and the
// WorkloadPriorityClass of its trace priority instead of the PickyMan queue, created
// suspended (as Kueue's webhook would make it), and its pods resuming from the newest
// checkpoint they wrote (AnnotationResumeLatest). The pods carry no PriorityClass: Kueue
// admits by quota and leaves placement to kube-scheduler, whose own priority preemption
// would otherwise delete a lower-priority job's pods behind Kueue's back.
func ForKueue(obj client.Object, priority int32) (client.Object, error) {
	pj, ok := obj.(*kftraining.PyTorchJob)
	if !ok {
		return nil, fmt.Errorf("replay under Kueue: %T is not a PyTorchJob (Kueue admits the replay's PyTorchJobs only)", obj)
	}
	pj = pj.DeepCopy()
	delete(pj.Labels, pickymanv1.LabelQueue)
	pj.Labels[KueueLabelQueue] = KueueLocalQueue
	if priority != 0 {
		pj.Labels[KueueLabelPriority] = PriorityClassName(priority)
	}
	suspend := true
	pj.Spec.RunPolicy.Suspend = &suspend
	for _, r := range pj.Spec.PyTorchReplicaSpecs {
		if r.Template.Annotations == nil {
			r.Template.Annotations = map[string]string{}
		}
		r.Template.Annotations[AnnotationResumeLatest] = "true"
		r.Template.Spec.PriorityClassName = ""
	}
	return pj, nil
}

// prepareKueue creates the replay's Kueue objects (those that exist are left as they are).
func prepareKueue(ctx context.Context, c Clients, o Options, jobs []traces.Job) error {
	if c.Dynamic == nil {
		return fmt.Errorf("replay under Kueue: no dynamic client")
	}
	for _, u := range KueueObjects(jobs, o.Namespace, o.KueueFlavors) {
		gvr := schema.GroupVersionResource{Group: kueueGroup, Version: kueueVersion, Resource: kueueResource[u.GetKind()]}
		var ri dynamic.ResourceInterface = c.Dynamic.Resource(gvr)
		if ns := u.GetNamespace(); ns != "" {
			ri = c.Dynamic.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kueue %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// WorkloadState is what the replay reads from one of Kueue's Workloads.
type WorkloadState struct {
	// Job is the name of the PyTorchJob that owns the Workload.
	Job string
	// Admitted: the Workload holds quota and is admitted; Finished: its job ended.
	Admitted, Finished bool
}

// ReadWorkload reads a Workload's owner and state from its conditions.
func ReadWorkload(u *unstructured.Unstructured) WorkloadState {
	var s WorkloadState
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind == kftraining.PyTorchJobKind {
			s.Job = ref.Name
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != string(metav1.ConditionTrue) {
			continue
		}
		switch m["type"] {
		case "Admitted":
			s.Admitted = true
		case "Finished":
			s.Finished = true
		}
	}
	if s.Finished {
		s.Admitted = false
	}
	return s
}

// workloadTracker records, from a watch of the replay's Workloads, when each job was admitted,
// evicted and finished, at the moment the change is seen (the conditions' own times have a
// resolution of a second, a hundred trace seconds at the default time scale).
type workloadTracker struct {
	mu    sync.Mutex
	now   func() time.Time
	last  map[string]WorkloadState
	occ   map[string][]occurrence
	evict map[string]int32
}

func newWorkloadTracker(now func() time.Time) *workloadTracker {
	return &workloadTracker{now: now, last: map[string]WorkloadState{}, occ: map[string][]occurrence{}, evict: map[string]int32{}}
}

// observe records the transitions from the job's last seen state to s: Started when it is
// admitted, Suspended when it loses its admission (an eviction: Kueue's preemption), Finished
// when it ends.
func (t *workloadTracker) observe(s WorkloadState) {
	if s.Job == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, at := t.last[s.Job], t.now()
	if prev.Finished {
		return
	}
	switch {
	case s.Admitted && !prev.Admitted:
		t.occ[s.Job] = append(t.occ[s.Job], occurrence{"Started", at})
	case !s.Admitted && prev.Admitted && !s.Finished:
		t.occ[s.Job] = append(t.occ[s.Job], occurrence{"Suspended", at})
		t.evict[s.Job]++
	}
	if s.Finished {
		t.occ[s.Job] = append(t.occ[s.Job], occurrence{"Finished", at})
	}
	t.last[s.Job] = s
}

// counts are the jobs queued (a Workload neither admitted nor finished), running and
// finished.
func (t *workloadTracker) counts() (queued, running, finished int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.last {
		switch {
		case s.Finished:
			finished++
		case s.Admitted:
			running++
		default:
			queued++
		}
	}
	return queued, running, finished
}

// snapshot copies the occurrences and the eviction counts.
func (t *workloadTracker) snapshot() (map[string][]occurrence, map[string]int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	occ := make(map[string][]occurrence, len(t.occ))
	for k, v := range t.occ {
		occ[k] = slices.Clone(v)
	}
	ev := make(map[string]int32, len(t.evict))
	for k, v := range t.evict {
		ev[k] = v
	}
	return occ, ev
}

// pending lists the jobs not finished, by name, with their state.
func (t *workloadTracker) pending(jobs []traces.Job) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for i, j := range jobs {
		name := JobName(i)
		s, ok := t.last[name]
		state := "no Workload yet"
		switch {
		case s.Finished:
			continue
		case s.Admitted:
			state = "admitted"
		case ok:
			state = "queued"
		}
		out = append(out, fmt.Sprintf("%s (trace job %s): %s", name, j.ID, state))
	}
	return out
}

// watch runs an informer on the namespace's Workloads until ctx ends; it returns once the
// informer's cache has synced.
func (t *workloadTracker) watch(ctx context.Context, dyn dynamic.Interface, ns string) error {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	inf := f.ForResource(workloadsGVR).Informer()
	see := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			t.observe(ReadWorkload(u))
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watch Workloads in %s: %w", ns, ctx.Err())
	}
	return nil
}

// runKueue replays the jobs under real Kueue: the Kueue objects, then the jobs at their
// arrivals (ForKueue), followed through their Workloads until every job finished.
func runKueue(ctx context.Context, c Clients, o Options) (*metrics.Run, error) {
	jobs, built, err := buildJobs(o)
	if err != nil {
		return nil, err
	}
	for i := range built {
		if built[i], err = ForKueue(built[i], jobs[i].Priority); err != nil {
			return nil, err
		}
	}
	if err := prepare(ctx, c, o, jobs); err != nil {
		return nil, err
	}
	if err := prepareKueue(ctx, c, o, jobs); err != nil {
		return nil, err
	}
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	tr := newWorkloadTracker(time.Now)
	if err := tr.watch(wctx, c.Dynamic, o.Namespace); err != nil {
		return nil, err
	}
	start := time.Now()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := newSubmitter(len(jobs))
	go sub.run(sctx, c, o, jobs, built, start)
	if err := followKueue(ctx, o, jobs, sub, tr, start); err != nil {
		return nil, err
	}
	<-sub.done
	wall := time.Since(start)
	occ, evictions := tr.snapshot()
	counts := map[string]jobCounts{}
	for name, n := range evictions {
		counts[name] = jobCounts{preemptions: n}
	}
	run, err := assemble(o, jobs, sub.submitted, start, occ, counts)
	if err != nil {
		return nil, err
	}
	EstimateLost(run, sim.DefaultPhysics())
	run.Wall = wall
	return run, nil
}

// followKueue prints the progress every 2 s and returns when every job was submitted and
// finished; it fails when submitting failed, or when nothing changed for o.Stuck after the
// last submission.
func followKueue(ctx context.Context, o Options, jobs []traces.Job, sub *submitter, tr *workloadTracker, start time.Time) error {
	lastChange, lastKey := time.Now(), ""
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		n, serr := sub.state()
		if serr != nil {
			return serr
		}
		queued, running, finished := tr.counts()
		if key := fmt.Sprint(n, queued, running, finished); key != lastKey {
			lastKey, lastChange = key, time.Now()
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "replay %s (Kueue): %d/%d submitted, %d queued, %d admitted, %d finished; trace time %v\n",
				o.Name, n, len(jobs), queued, running, finished, (time.Duration(float64(time.Since(start)) * o.TimeScale)).Round(time.Minute))
		}
		if n == len(jobs) && finished == len(jobs) {
			return nil
		}
		if n == len(jobs) && time.Since(lastChange) > o.Stuck {
			e := &StuckError{Since: time.Since(lastChange), Pending: tr.pending(jobs)}
			sort.Strings(e.Pending)
			if o.Components != nil {
				e.State = o.Components()
			}
			return e
		}
	}
}

// EstimateLost fills in each job's GPU time lost to preemption on the cluster, which the
// Workloads do not say: the time it held its GPUs beyond its service time and one start
// (container start and warm-up of the physics), which is the work it redid and the overheads
// of its restarts. The agent's noise makes it approximate (docs/testbed.md).
func EstimateLost(run *metrics.Run, ph sim.Physics) {
	first := ph.ContainerStart + ph.WarmUp
	for i := range run.Jobs {
		j := &run.Jobs[i]
		if j.Preemptions == 0 {
			continue
		}
		j.RedoneWork = max(0, j.Held-j.Service-first)
	}
}
