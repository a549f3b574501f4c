package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// Options configure one replay.
type Options struct {
	// Jobs are the trace's jobs, their Submit offsets from the replay's start.
	Jobs []traces.Job
	// Name labels the jobs (LabelReplay) and the run (Policy + " (cluster)").
	Name   string
	Policy string
	// GPUs is the cluster's GPU count (for utilization).
	GPUs int32
	// TimeScale is trace seconds per real second (the agent's --time-scale).
	TimeScale float64
	// Namespace receives the jobs; it is created if missing.
	Namespace string
	// Stuck is how long (real time) the replay waits with every job submitted and no job
	// changing phase before it stops with a diagnosis (default 3 minutes).
	Stuck time.Duration
	// Components, if set, describes the state of the cluster's components for a diagnosis.
	Components func() string
	// Progress receives a progress line every few seconds (nil: none).
	Progress io.Writer
	// Kind maps trace jobs to job kinds: KindPyTorchJob (""), KindRayJob, KindTrainJob or
	// KindMixed.
	Kind string
	// SubmitRetry is how long a submission refused for a transient reason (the API server
	// could not reach PickyMan's webhook: the operator restarting) is retried (default 2
	// minutes). The job's submit time stays its arrival, so the outage counts as waiting.
	SubmitRetry time.Duration
	// Jobs get the simulator's gangs (sim.Shape, with Seed and the largest node's GPUs,
	// MaxNode): a job whose worker shape the trace did not give is split into workers that
	// fit a node, and the share Elastic makes elastic becomes elastic PyTorchJobs.
	Elastic sim.Elasticity
	Seed    int64
	MaxNode int32
	// Scheduler admits the jobs: SchedulerPickyMan ("") or SchedulerKueue (real Kueue, with
	// a ClusterQueue of KueueFlavors; kueue.go).
	Scheduler    string
	KueueFlavors []KueueFlavor
	// Estimates declares each job's true run time as its run-time estimate
	// (pickyman.dev/estimate, in real time at TimeScale, rounded up to whole seconds): the
	// simulator's oracle, given to the oracle policies (sjf, srtf) on the cluster.
	Estimates bool
}

// Clients are what the replay talks to the cluster with (an uncached client).
type Clients struct {
	Client client.Client
	Kube   kubernetes.Interface
	// Dynamic reads Kueue's objects (replays under SchedulerKueue).
	Dynamic dynamic.Interface
}

// StuckError is a replay that stopped making progress.
type StuckError struct {
	Since   time.Duration
	Pending []string
	State   string
}

func (e *StuckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay stuck: no job changed phase for %v; %d jobs not finished:\n", e.Since.Round(time.Second), len(e.Pending))
	for i, p := range e.Pending {
		if i == 20 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(e.Pending)-20)
			break
		}
		b.WriteString("  " + p + "\n")
	}
	if e.State != "" {
		b.WriteString(e.State)
	}
	return b.String()
}

// Transient says whether a later attempt of a request that failed with err may succeed: a
// webhook that could not be called, a server timeout or overload, or the API server itself
// unreachable (restarting: the connection refused, reset or cut short).
func Transient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		// IsProbableEOF compares the error itself (under a url.Error) only; this finds one
		// wrapped by the client's own messages.
		errors.Is(err, io.ErrUnexpectedEOF)
}

// createRetrying creates obj; an error that a later attempt may not meet (a webhook that could
// not be called, a server timeout or overload) is retried with backoff for up to retry (2
// minutes if zero). A job that exists already is created.
func createRetrying(ctx context.Context, c client.Client, obj client.Object, retry time.Duration, progress io.Writer) error {
	if retry <= 0 {
		retry = 2 * time.Minute
	}
	first := time.Now()
	deadline := first.Add(retry)
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
		if err == nil || apierrors.IsAlreadyExists(err) {
			if attempt > 1 && progress != nil {
				fmt.Fprintf(progress, "replay: %s/%s accepted at attempt %d, %v after the first\n", obj.GetNamespace(), obj.GetName(),
					attempt, time.Since(first).Round(100*time.Millisecond))
			}
			return nil
		}
		if !Transient(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		if attempt == 1 && progress != nil {
			fmt.Fprintf(progress, "replay: %s/%s refused (%v); retrying for up to %v\n", obj.GetNamespace(), obj.GetName(), err, retry)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// Run replays the jobs and returns what the cluster did, in trace time: it builds one
// object per trace job, submits each at its scaled arrival, follows the Allocations until
// every job finished, and reads the timelines back.
func Run(ctx context.Context, c Clients, o Options) (*metrics.Run, error) {
	if o.TimeScale <= 0 {
		return nil, errors.New("replay: time scale must be positive")
	}
	if o.Stuck <= 0 {
		o.Stuck = 3 * time.Minute
	}
	if o.Scheduler == SchedulerKueue {
		return runKueue(ctx, c, o)
	}
	jobs, built, err := buildJobs(o)
	if err != nil {
		return nil, err
	}
	if err := prepare(ctx, c, o, jobs); err != nil {
		return nil, err
	}
	if err := createTrainingRuntimes(ctx, c.Client, built); err != nil {
		return nil, err
	}
	start := time.Now()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := newSubmitter(len(jobs))
	go sub.run(sctx, c, o, jobs, built, start)
	if err := follow(ctx, c, o, jobs, sub, start); err != nil {
		return nil, err
	}
	<-sub.done
	wall := time.Since(start)
	run, err := timelines(ctx, c, o, jobs, sub.submitted, start)
	if err != nil {
		return nil, err
	}
	run.Wall = wall
	return run, nil
}

// buildJobs sorts the trace's jobs by arrival and builds the object of each: the simulator's
// gang (a job whose worker shape the trace did not give is split to fit the largest node),
// and an elastic PyTorchJob for the elastic share.
func buildJobs(o Options) ([]traces.Job, []client.Object, error) {
	jobs := append([]traces.Job(nil), o.Jobs...)
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	built := make([]client.Object, len(jobs))
	for i, j := range jobs {
		kind, err := KindOf(o.Kind, i)
		if err != nil {
			return nil, nil, err
		}
		w, per, lo, hi := sim.Shape(&j, o.Seed, o.Elastic, o.MaxNode)
		if hi > 0 {
			if kind != KindPyTorchJob {
				return nil, nil, fmt.Errorf("trace job %s is elastic: elastic jobs are replayed as PyTorchJobs, not %s", j.ID, kind)
			}
			if built[i], err = BuildElastic(j, w, per, lo, hi, JobName(i), o.Namespace, o.Name); err != nil {
				return nil, nil, err
			}
			continue
		}
		if w*per == j.GPUs {
			j.Workers, j.GPUsPerWorker = w, per
		}
		if built[i], err = Build(kind, j, JobName(i), o.Namespace, o.Name); err != nil {
			return nil, nil, err
		}
	}
	if o.Estimates {
		for i, j := range jobs {
			DeclareEstimate(built[i], j.Duration, o.TimeScale)
		}
	}
	return jobs, built, nil
}

// submitter creates the jobs at their scaled arrival times, in the background.
type submitter struct {
	done      chan struct{}
	mu        sync.Mutex
	submitted []time.Time // when each job was created
	n         int
	err       error
}

func newSubmitter(n int) *submitter {
	return &submitter{done: make(chan struct{}), submitted: make([]time.Time, n)}
}

func (s *submitter) run(ctx context.Context, c Clients, o Options, jobs []traces.Job, built []client.Object, start time.Time) {
	defer close(s.done)
	for i, j := range jobs {
		if d := time.Until(start.Add(time.Duration(float64(j.Submit) / o.TimeScale))); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		now := time.Now()
		if err := createRetrying(ctx, c.Client, built[i], o.SubmitRetry, o.Progress); err != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("submit trace job %s as %s/%s: %w", j.ID, o.Namespace, JobName(i), err)
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.submitted[i], s.n = now, s.n+1
		s.mu.Unlock()
	}
}

// state is how many jobs were submitted and the error that stopped submitting, if any.
func (s *submitter) state() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.err
}

// followInterval is how often follow polls.
var followInterval = 2 * time.Second

// follow polls the Allocations every followInterval, prints the progress, and returns when every job
// was submitted and finished; it fails when submitting failed, or when nothing changed for
// o.Stuck after the last submission.
func follow(ctx context.Context, c Clients, o Options, jobs []traces.Job, sub *submitter, start time.Time) error {
	lastChange, lastKey := time.Now(), ""
	var unreachable time.Time // since when the API server has not answered; zero when it has
	tick := time.NewTicker(followInterval)
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
		var list pickymanv1.AllocationList
		if err := c.Client.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil {
			// An API server that restarts is waited for as long as a replay may stand still.
			if !Transient(err) {
				return fmt.Errorf("list Allocations: %w", err)
			}
			if unreachable.IsZero() {
				unreachable = time.Now()
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "replay %s: API server unreachable (%v); waiting up to %v\n", o.Name, err, o.Stuck)
				}
			}
			if time.Since(unreachable) > o.Stuck {
				return fmt.Errorf("list Allocations: the API server has not answered for %v: %w", time.Since(unreachable).Round(time.Second), err)
			}
			continue
		}
		if !unreachable.IsZero() && o.Progress != nil {
			fmt.Fprintf(o.Progress, "replay %s: API server answers again after %v\n", o.Name, time.Since(unreachable).Round(100*time.Millisecond))
		}
		unreachable = time.Time{}
		count := map[pickymanv1.AllocationPhase]int{}
		for _, a := range list.Items {
			count[a.Status.Phase]++
		}
		key := fmt.Sprint(n, count)
		if key != lastKey {
			lastKey, lastChange = key, time.Now()
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "replay %s: %d/%d submitted, %d queued, %d running, %d preempting, %d finished; trace time %v\n",
				o.Name, n, len(jobs), count[pickymanv1.AllocationQueued]+count[""], count[pickymanv1.AllocationAdmitted],
				count[pickymanv1.AllocationPreempting]+count[pickymanv1.AllocationSuspended], count[pickymanv1.AllocationFinished],
				(time.Duration(float64(time.Since(start)) * o.TimeScale)).Round(time.Minute))
		}
		if n == len(jobs) && count[pickymanv1.AllocationFinished] == len(jobs) {
			return nil
		}
		if n == len(jobs) && time.Since(lastChange) > o.Stuck {
			return stuck(list.Items, time.Since(lastChange), o, jobs)
		}
	}
}

// prepare creates the namespace and the priority classes.
func prepare(ctx context.Context, c Clients, o Options, jobs []traces.Job) error {
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", o.Namespace, err)
		}
	} else if err != nil {
		return fmt.Errorf("namespace %s: %w", o.Namespace, err)
	}
	for _, pc := range PriorityClasses(jobs) {
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}

// stuck diagnoses a replay that stopped: every unfinished job with its phase and since
// when, and the components' state.
func stuck(items []pickymanv1.Allocation, since time.Duration, o Options, jobs []traces.Job) error {
	e := &StuckError{Since: since}
	traceID := map[string]string{}
	for i, j := range jobs {
		traceID[JobName(i)] = j.ID
	}
	for _, a := range items {
		if a.Status.Phase == pickymanv1.AllocationFinished {
			continue
		}
		when := a.CreationTimestamp.Time
		if c := meta.FindStatusCondition(a.Status.Conditions, string(a.Status.Phase)); c != nil {
			when = c.LastTransitionTime.Time
		}
		phase := string(a.Status.Phase)
		if phase == "" {
			phase = "not yet queued"
		}
		e.Pending = append(e.Pending, fmt.Sprintf("%s/%s (trace job %s): %s since %s", a.Namespace, a.Spec.Job.Name,
			traceID[a.Spec.Job.Name], phase, when.Format(time.RFC3339)))
	}
	sort.Strings(e.Pending)
	if o.Components != nil {
		e.State = o.Components()
	}
	return e
}

// occurrence is one operator event of a job at a real time.
type occurrence struct {
	reason string
	at     time.Time
}

// withStatus completes a job's event occurrences from its Allocation: events are best
// effort (an operator killed between a write and the flush of its event recorder loses the
// event), while the Allocation records the first admission and the end for good. A job
// without a Started event starts at its FirstAdmitted, one without a Finished event
// finishes at its Finished time.
func withStatus(occ []occurrence, a *pickymanv1.Allocation) []occurrence {
	if a == nil {
		return occ
	}
	has := func(reason string) bool {
		return slices.ContainsFunc(occ, func(o occurrence) bool { return o.reason == reason })
	}
	if t := a.Status.FirstAdmitted; t != nil && !has("Started") {
		occ = append(occ, occurrence{"Started", t.Time})
	}
	if t := a.Status.Finished; t != nil && !has("Finished") {
		occ = append(occ, occurrence{"Finished", t.Time})
	}
	return occ
}

// timelines builds the run from the operator's events (events.k8s.io, microsecond times) and
// the Allocations.
func timelines(ctx context.Context, c Clients, o Options, jobs []traces.Job, submitted []time.Time, start time.Time) (*metrics.Run, error) {
	evs, err := c.Kube.EventsV1().Events(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	byJob := map[string][]occurrence{}
	for i := range evs.Items {
		ev := &evs.Items[i]
		if ev.Regarding.Kind != "PyTorchJob" && ev.Regarding.Kind != "RayJob" && ev.Regarding.Kind != "TrainJob" {
			continue
		}
		for _, t := range eventTimes(ev) {
			byJob[ev.Regarding.Name] = append(byJob[ev.Regarding.Name], occurrence{ev.Reason, t})
		}
	}
	var list pickymanv1.AllocationList
	if err := c.Client.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil {
		return nil, fmt.Errorf("list Allocations: %w", err)
	}
	counts := map[string]jobCounts{}
	for i := range list.Items {
		a := &list.Items[i]
		byJob[a.Spec.Job.Name] = withStatus(byJob[a.Spec.Job.Name], a)
		counts[a.Spec.Job.Name] = jobCounts{preemptions: a.Status.Preemptions, resizes: a.Status.Resizes}
	}
	return assemble(o, jobs, submitted, start, byJob, counts)
}

// jobCounts are a job's preemptions and resizes as its scheduler counted them.
type jobCounts struct{ preemptions, resizes int32 }

// assemble builds the run from every job's occurrences (Started, Preempting, Suspended,
// Finished) and counts, in trace time from start. A job's SuspendDelay is the time from each
// Preempting (the decision) to the Suspended that follows it (its GPUs free).
func assemble(o Options, jobs []traces.Job, submitted []time.Time, start time.Time, byJob map[string][]occurrence, counts map[string]jobCounts) (*metrics.Run, error) {
	trace := func(t time.Time) time.Duration { return time.Duration(float64(t.Sub(start)) * o.TimeScale) }
	run := &metrics.Run{Policy: o.Policy + " (cluster)", GPUs: o.GPUs}
	type change struct {
		at             time.Duration
		gpus, queueing int
	}
	var changes []change
	var missing []string
	for i, j := range jobs {
		name := JobName(i)
		occ := byJob[name]
		sort.Slice(occ, func(a, b int) bool { return occ[a].at.Before(occ[b].at) })
		rec := metrics.JobRecord{ID: j.ID, GPUs: j.GPUs, Submit: trace(submitted[i]), Service: j.Duration}
		var startAt, decidedAt time.Time
		holding, started, finished := false, false, false
		changes = append(changes, change{rec.Submit, 0, 1})
		for _, e := range occ {
			switch e.reason {
			case "Started":
				if !started {
					rec.FirstStart, started = trace(e.at), true
				}
				if !holding {
					startAt, holding = e.at, true
					changes = append(changes, change{trace(e.at), int(j.GPUs), -1})
				}
			case "Preempting":
				if holding && decidedAt.IsZero() {
					decidedAt = e.at
				}
			case "Suspended":
				if holding && !decidedAt.IsZero() {
					rec.SuspendDelay += trace(e.at) - trace(decidedAt)
				}
				decidedAt = time.Time{}
				if holding {
					rec.Held += trace(e.at) - trace(startAt)
					holding = false
					changes = append(changes, change{trace(e.at), -int(j.GPUs), 1})
				}
			case "Finished":
				rec.Finish = trace(e.at)
				if holding {
					rec.Held += trace(e.at) - trace(startAt)
					holding = false
					changes = append(changes, change{trace(e.at), -int(j.GPUs), 0})
				}
				finished = true
			}
		}
		rec.Preemptions, rec.Resizes = counts[name].preemptions, counts[name].resizes
		if !finished || !started {
			missing = append(missing, name)
			continue
		}
		run.Jobs = append(run.Jobs, rec)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no Started or Finished event for %d jobs (first: %s): the API server may have dropped events", len(missing), missing[0])
	}
	sort.SliceStable(changes, func(a, b int) bool { return changes[a].at < changes[b].at })
	series := metrics.NewSeries(o.GPUs, 400, time.Minute)
	var gpus, queued int
	var end time.Duration
	for _, ch := range changes {
		gpus += ch.gpus
		queued += ch.queueing
		series.Record(ch.at, int32(gpus), queued)
		end = ch.at
	}
	run.Series = series.Points(end)
	return run, nil
}

// eventTimes returns when an event happened: its event time, and the last observed time of
// its series if the API server merged repeats into one.
func eventTimes(ev *eventsv1.Event) []time.Time {
	t := ev.EventTime.Time
	if t.IsZero() {
		t = ev.DeprecatedFirstTimestamp.Time
	}
	if t.IsZero() {
		t = ev.CreationTimestamp.Time
	}
	out := []time.Time{t}
	if ev.Series != nil && ev.Series.Count > 1 {
		out = append(out, ev.Series.LastObservedTime.Time)
	}
	return out
}

// DeclareEstimate annotates job obj with run time d of trace time as its run-time estimate
// in real time at time scale scale, rounded up to whole seconds (the operator keeps whole
// seconds; a job shorter than one would otherwise declare none).
func DeclareEstimate(obj client.Object, d time.Duration, scale float64) {
	real := time.Duration(math.Ceil(d.Seconds()/scale)) * time.Second
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[pickymanv1.AnnotationEstimate] = real.String()
	obj.SetAnnotations(ann)
}
