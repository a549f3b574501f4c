//go:build realnode && torch

package cluster

// The traffic test (make test-agent-traffic, called by make test-agent-torch; root, the real
// node's dependencies of make test-realnode, and Debian's python3-torch): PickyMan's first
// idea measured for real. A cluster with one real node; the testbed's storage server
// (testbed/storage) holds generated datasets; real PyTorch training pods on the real node
// (agent/python/examples/train_ddp.py --data-url, Debian's python3-torch) read their dataset
// from it every epoch, at several sizes, read rates and compute per step; the agent
// (agent/cmd/pickyman-agent, a process in the host's PID namespace as its DaemonSet runs)
// measures each pod's receive traffic in its network namespace and reports it in the pod's
// progress annotation; the operator's predictor turns each report into an epoch-time
// prediction as the scheduler does (predictor.RateReports: an EventTraffic over the time since the
// previous report). Each epoch's prediction is the newest made before that epoch ended; it is
// scored against the epoch's time measured by the training script.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/pickyman/pickyman/agent/test/kubetest"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/predictor"
	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/storage"
)

const (
	// torchHostImage runs the host's Debian python3 and python3-torch: its root holds only
	// the merged-/usr links, and the pod mounts the host's /usr and /etc/alternatives
	// read-only.
	torchHostImage = "pickyman.local/torch-host:testbed"
	torchPython    = "/usr/bin/python3"
	// trafficMinute is how much traffic a prediction must have seen to be scored.
	trafficMinute = time.Minute
)

// trafficJob is one training pod of the traffic test.
type trafficJob struct {
	name      string
	size      int64   // dataset bytes, read once per epoch
	rate      float64 // the storage server's pace per reader, bytes/s (0: unpaced)
	stepDelay float64 // compute per step beyond the model's, seconds
	epochs    int
}

// scriptEvent is a PICKYMAN_EVENT line of the training script.
type scriptEvent struct {
	Event string  `json:"event"`
	T     float64 `json:"t"`
	Epoch int32   `json:"epoch"`
	Bytes int64   `json:"bytes"`
	Hash  string  `json:"hash"`
}

func (e scriptEvent) time() time.Time { return time.Unix(0, int64(e.T*1e9)) }

func TestTorchTrafficOnRealNode(t *testing.T) {
	if out, err := exec.Command(torchPython, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available()").CombinedOutput(); err != nil {
		t.Fatalf("PyTorch is not usable with %s (run `make agent-deps`): %v\n%s", torchPython, err, out)
	}
	// The datasets, served by the cluster's dataset store on node 0's bridge address (the
	// pods' gateway), each paced to its reader's share.
	jobs := []trafficJob{
		{name: "io-bound", size: 40 << 20, rate: 4 << 20, epochs: 10},
		{name: "mixed", size: 96 << 20, rate: 12 << 20, stepDelay: 0.1, epochs: 9},
		{name: "compute-bound", size: 24 << 20, stepDelay: 0.45, epochs: 8},
	}
	// The job that is suspended at an epoch boundary and resumed from its checkpoint.
	sj := trafficJob{name: "suspend", size: 16 << 20, stepDelay: 0.1, epochs: 5}
	var datasets []storage.Dataset
	for _, j := range append(jobs, sj) {
		datasets = append(datasets, storage.Dataset{Name: j.name + ".bin", Size: j.size, Rate: j.rate})
	}
	o := realNodeClusterOptions(t, "rntorch", func(o *Options) {
		o.Trainer = false
		o.Storage = &Storage{Datasets: datasets}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := Down(ctx, o); err != nil {
		t.Fatalf("down before up: %v", err)
	}
	t.Cleanup(func() {
		if err := Down(context.Background(), o); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	agentBin := buildAgent(t)
	if _, err := Up(ctx, o); err != nil {
		t.Fatalf("up: %v", err)
	}
	c, err := NewClients(o.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	node := o.RealNodeNames()[0]

	// The agent, in the host's PID namespace, its socket directory shared with the pods.
	sockDir := podDir(t, "pmtraffic-sock")
	agentLog := filepath.Join(t.TempDir(), "agent.log")
	startAgent(ctx, t, agentBin, o.Kubeconfig(), node, sockDir, agentLog)

	urls := map[string]string{}
	for _, j := range append(jobs, sj) {
		if urls[j.name], err = o.StorageURL(j.name + ".bin"); err != nil {
			t.Fatal(err)
		}
	}

	// The image, and one training pod per job.
	archive := filepath.Join(t.TempDir(), "torch-host.tar")
	img := Image{Ref: torchHostImage, Entrypoint: []string{torchPython}, Env: []string{"PATH=/usr/bin:/bin"}, Files: []ImageFile{
		{Path: "bin", Link: "usr/bin"}, {Path: "lib", Link: "usr/lib"}, {Path: "lib64", Link: "usr/lib64"}, {Path: "sbin", Link: "usr/sbin"},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/tmp:/bin/sh\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\n")},
	}}
	if err := WriteImageArchiveFile(archive, img); err != nil {
		t.Fatal(err)
	}
	if err := o.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: realNodeTestNS}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	pyDir, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "agent", "python"))
	if err != nil {
		t.Fatal(err)
	}
	// One pod at a time, each once the one before has begun its first epoch: the starts are
	// the overhead model's samples below, and three containers that start at once on this
	// node's 2 cores take twice as long as one (4.5-5 s against 2 s).
	created := map[string]time.Time{}
	for _, j := range jobs {
		created[j.name] = time.Now()
		createPod(ctx, t, c, trafficPod(node, j.name, j, urls[j.name], pyDir, sockDir, "", nil))
		waitEpochBegin(ctx, t, c, j.name, 0)
	}

	// Every progress report of every pod, in order, until the pods end.
	reports := map[string][]agentv1alpha1.Progress{}
	var mu sync.Mutex
	pctx, pcancel := context.WithCancel(ctx)
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		last := map[string]string{}
		_ = wait.PollUntilContextCancel(pctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			for _, j := range jobs {
				p, err := c.Kube.CoreV1().Pods(realNodeTestNS).Get(ctx, j.name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				v := p.Annotations[agentv1alpha1.AnnotationProgress]
				if v == "" || v == last[j.name] {
					continue
				}
				last[j.name] = v
				var pr agentv1alpha1.Progress
				if json.Unmarshal([]byte(v), &pr) == nil {
					mu.Lock()
					reports[j.name] = append(reports[j.name], pr)
					mu.Unlock()
				}
			}
			return false, nil
		})
	}()
	for _, j := range jobs {
		p := waitPod(ctx, t, c, o, j.name, 12*time.Minute, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		if p.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("pod %s %s: %s\nlog:\n%s\nagent log:\n%s", j.name, p.Status.Phase, describe(p), tail(podLog(ctx, c, j.name), 40), tail(readFile(agentLog), 30))
		}
	}
	pcancel()
	<-pollDone

	// Score: each epoch against the newest prediction made before it ended, once a minute of
	// the job's traffic had been seen.
	var epochs, within int
	var starts []time.Duration
	for _, j := range jobs {
		evs := parseScriptEvents(podLog(ctx, c, j.name))
		begin, end := map[int32]time.Time{}, map[int32]time.Time{}
		for _, e := range evs {
			switch e.Event {
			case "epoch_begin":
				begin[e.Epoch] = e.time()
			case "epoch_end":
				end[e.Epoch] = e.time()
			}
		}
		if len(end) != j.epochs {
			t.Fatalf("%s: %d epochs ended, want %d; log:\n%s", j.name, len(end), j.epochs, tail(podLog(ctx, c, j.name), 40))
		}
		mu.Lock()
		rs := append([]agentv1alpha1.Progress(nil), reports[j.name]...)
		mu.Unlock()
		preds := predictFromTraffic(j, rs)
		if len(preds) == 0 {
			t.Fatalf("%s: no prediction from traffic; %d reports; agent log:\n%s", j.name, len(rs), tail(readFile(agentLog), 30))
		}
		start := begin[0]
		starts = append(starts, start.Sub(created[j.name]))
		for e := int32(0); e < int32(j.epochs); e++ {
			b, ok1 := begin[e]
			en, ok2 := end[e]
			if !ok1 || !ok2 {
				t.Fatalf("%s: epoch %d lacks its begin or end", j.name, e)
			}
			actual := en.Sub(b)
			var pred *trafficPrediction
			for i := range preds {
				if preds[i].at.Before(en) {
					pred = &preds[i]
				}
			}
			if pred == nil {
				t.Logf("%-13s epoch %d: %6.2fs measured, no prediction yet", j.name, e, actual.Seconds())
				continue
			}
			rel := (pred.epoch.Seconds() - actual.Seconds()) / actual.Seconds()
			scored := pred.at.Sub(start) >= trafficMinute
			t.Logf("%-13s epoch %d: %6.2fs measured, %6.2fs predicted at +%5.1fs (%+.1f%%)%s", j.name, e, actual.Seconds(),
				pred.epoch.Seconds(), pred.at.Sub(start).Seconds(), 100*rel, map[bool]string{true: "", false: " (before a minute of traffic, not scored)"}[scored])
			if !scored {
				continue
			}
			epochs++
			if math.Abs(rel) <= 0.10 {
				within++
			}
		}
	}
	fmt.Printf("traffic prediction: epochs=%d within10=%d\n", epochs, within)
	if epochs < 3*len(jobs) {
		t.Errorf("only %d epochs scored, want at least %d", epochs, 3*len(jobs))
	}
	if within*5 < epochs*4 {
		t.Errorf("%d of %d epochs predicted within 10%% from traffic, want at least 80%%", within, epochs)
	}

	suspendAndResume(ctx, t, c, o, node, sj, urls[sj.name], pyDir, sockDir, agentLog, starts)
}

// suspendAndResume runs job j on the real node, asks it for a checkpoint at the boundary of
// its third epoch as the operator does (the pod's checkpoint-request annotation, which the
// agent forwards), then starts a new pod that resumes from the acknowledged checkpoint, and
// compares the suspend delay and the resume time with the overhead model's. The model learns
// its start as the operator does, from every first start it sees (pod created to first
// epoch, no checkpoint to load): those of the earlier pods on the node (starts) and the
// job's own first pod's; its bandwidths come from a calibration of the checkpoint directory.
func suspendAndResume(ctx context.Context, t *testing.T, c *Clients, o Options, node string, j trafficJob, url, pyDir, sockDir, agentLog string, starts []time.Duration) {
	ckptDir := podDir(t, "pmtraffic-ckpt")
	const first, second = "suspend", "suspend-resumed"
	created1 := time.Now()
	createPod(ctx, t, c, trafficPod(node, first, j, url, pyDir, sockDir, ckptDir, nil))
	const at = int32(2)
	waitEpochBegin(ctx, t, c, first, at)
	tReq := time.Now()
	req, _ := json.Marshal(agentv1alpha1.CheckpointRequest{ID: "rn-suspend", Mode: agentv1alpha1.ModeBoundary, Deadline: tReq.Add(2 * time.Minute).UTC()})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(req)}}})
	if _, err := c.Kube.CoreV1().Pods(realNodeTestNS).Patch(ctx, first, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(ctx, t, c, o, first, 5*time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	log1 := podLog(ctx, c, first)
	evs := parseScriptEvents(log1)
	ckpt, susp := findEvent(evs, "checkpoint", -1), findEvent(evs, "suspended", -1)
	if p.Status.Phase != corev1.PodFailed || ckpt == nil || susp == nil || ckpt.Epoch != at+1 {
		t.Fatalf("%s %s: want it suspended with a checkpoint of epoch %d; log:\n%s\nagent log:\n%s", first, p.Status.Phase, at+1, tail(log1, 30), tail(readFile(agentLog), 20))
	}
	var ack agentv1alpha1.CheckpointAck
	if err := json.Unmarshal([]byte(p.Annotations[agentv1alpha1.AnnotationCheckpointAck]), &ack); err != nil || ack.RequestID != "rn-suspend" || ack.Epoch != ckpt.Epoch {
		t.Fatalf("%s: acknowledgement %q (%v), want request rn-suspend at epoch %d", first, p.Annotations[agentv1alpha1.AnnotationCheckpointAck], err, ckpt.Epoch)
	}

	rp, _ := json.Marshal(agentv1alpha1.ResumePoint{Epoch: ack.Epoch, Path: ack.Path})
	created2 := time.Now()
	createPod(ctx, t, c, trafficPod(node, second, j, url, pyDir, sockDir, ckptDir, map[string]string{agentv1alpha1.AnnotationResumeFrom: string(rp)}))
	p = waitPod(ctx, t, c, o, second, 5*time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	log2 := podLog(ctx, c, second)
	evs2 := parseScriptEvents(log2)
	loaded, begin2, done := findEvent(evs2, "loaded", ack.Epoch), findEvent(evs2, "epoch_begin", -1), findEvent(evs2, "done", -1)
	if p.Status.Phase != corev1.PodSucceeded || loaded == nil || begin2 == nil || done == nil {
		t.Fatalf("%s %s: want it resumed and done; log:\n%s", second, p.Status.Phase, tail(log2, 30))
	}
	if loaded.Hash != ckpt.Hash || begin2.Epoch != ack.Epoch || done.Epoch != int32(j.epochs) {
		t.Fatalf("%s: loaded %s (checkpoint %s), began at epoch %d (want %d), done at %d", second, loaded.Hash, ckpt.Hash, begin2.Epoch, ack.Epoch, done.Epoch)
	}

	// The model's inputs: the first starts seen on the node, this job's included; from the
	// first pod, its epoch time and the phase at the request; the checkpoint directory's
	// bandwidths.
	e0 := findEvent(evs, "epoch_begin", 0)
	starts = append(starts, e0.time().Sub(created1))
	var sum time.Duration
	var n int
	for e := int32(0); e < at; e++ {
		if b, en := findEvent(evs, "epoch_begin", e), findEvent(evs, "epoch_end", e); b != nil && en != nil {
			sum += en.time().Sub(b.time())
			n++
		}
	}
	epochTime := sum / time.Duration(n)
	writeBW, readBW := kubetest.CalibrateDir(t, ckptDir, ack.Bytes)
	model := overhead.New(overhead.Params{WriteBW: writeBW, ReadBW: readBW, Grace: 30 * time.Second})
	t0 := time.Now()
	for i, s := range starts {
		model.Observe(sched.Event{Kind: sched.EventStarted, Time: t0.Add(s), Job: &sched.Job{
			ID: fmt.Sprintf("traffic/start-%d", i), FirstStart: t0, LastStart: t0, WarmUntil: t0.Add(s)}})
	}
	start := model.Params("").Start
	cur := findEvent(evs, "epoch_begin", at)
	job := &sched.Job{ID: "traffic/" + j.name, Epochs: int32(j.epochs), EpochsDone: at, CheckpointBytes: ack.Bytes, SinceCheckpoint: tReq.Sub(cur.time())}
	est := model.Estimate(job, epochTime, tReq)
	suspend := time.Duration(ack.SuspendSeconds * float64(time.Second))
	resume := begin2.time().Sub(created2)
	errSuspend, errResume := rel(suspend, est.BoundaryDelay()), rel(resume, est.Resume)
	t.Logf("epoch time %v, phase at request %v, checkpoint %d bytes, write %.0f MB/s, read %.0f MB/s, pod start to first epoch %v (the mean of %v)",
		epochTime.Round(time.Millisecond), job.SinceCheckpoint.Round(time.Millisecond), ack.Bytes, writeBW/1e6, readBW/1e6, start.Round(time.Millisecond), roundAll(starts))
	t.Logf("suspend delay: measured %v, predicted %v; resume (pod created to first epoch): measured %v, predicted %v",
		suspend.Round(time.Millisecond), est.BoundaryDelay().Round(time.Millisecond), resume.Round(time.Millisecond), est.Resume.Round(time.Millisecond))
	fmt.Printf("overhead error on the real node: suspend=%+.1f%% resume=%+.1f%%\n", 100*errSuspend, 100*errResume)
	// Bounds that catch a broken model or measurement, not the targets (docs/policy.md): a
	// 2 s container start varies by a few hundred milliseconds on this node.
	for name, e := range map[string]struct{ err, bound float64 }{"suspend": {errSuspend, 0.25}, "resume": {errResume, 0.5}} {
		if math.Abs(e.err) > e.bound {
			t.Errorf("%s prediction off by %+.0f%%, want within %.0f%%", name, 100*e.err, 100*e.bound)
		}
	}
}

// waitEpochBegin waits until pod name's log shows epoch begin.
func waitEpochBegin(ctx context.Context, t *testing.T, c *Clients, name string, epoch int32) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return findEvent(parseScriptEvents(podLog(ctx, c, name)), "epoch_begin", epoch) != nil, nil
	}); err != nil {
		t.Fatalf("%s: epoch %d did not begin: log:\n%s", name, epoch, tail(podLog(ctx, c, name), 30))
	}
}

// roundAll rounds durations to the millisecond, for a log line.
func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// rel is the model's error relative to the measurement: (predicted - measured) / measured.
func rel(measured, predicted time.Duration) float64 {
	return (predicted - measured).Seconds() / measured.Seconds()
}

// findEvent returns the first event of that name (and epoch, unless -1), or nil.
func findEvent(evs []scriptEvent, name string, epoch int32) *scriptEvent {
	for i := range evs {
		if evs[i].Event == name && (epoch < 0 || evs[i].Epoch == epoch) {
			return &evs[i]
		}
	}
	return nil
}

// trafficPrediction is the predictor's epoch time after one report.
type trafficPrediction struct {
	at    time.Time
	epoch time.Duration
}

// predictFromTraffic feeds a job's reports to the operator's predictor as the scheduler does
// (predictor.RateReports: each report newer than the previous one with a read rate becomes an
// EventTraffic over the time between them) and returns the traffic prediction after each.
func predictFromTraffic(j trafficJob, rs []agentv1alpha1.Progress) []trafficPrediction {
	p := predictor.New(nil, predictor.DefaultConfig())
	job := &sched.Job{ID: "traffic/" + j.name, Workers: 1, GPUsPerWorker: 1, Epochs: int32(j.epochs), DatasetBytes: j.size, Phase: sched.Running}
	p.Observe(sched.Event{Kind: sched.EventSubmitted, Job: job})
	p.Observe(sched.Event{Kind: sched.EventStarted, Job: job})
	var out []trafficPrediction
	var reports predictor.RateReports
	for _, r := range rs {
		d, bytes, ok := reports.Sample(job.ID, r.Time, r.ReadRate)
		if !ok {
			continue
		}
		p.Observe(sched.Event{Kind: sched.EventTraffic, Time: r.Time, Job: job, Duration: d, Bytes: bytes})
		if pr := p.Predict(job); pr.Source == predictor.SourceTraffic && pr.EpochTime > 0 {
			out = append(out, trafficPrediction{at: r.Time, epoch: pr.EpochTime})
		}
	}
	return out
}

func parseScriptEvents(log string) []scriptEvent {
	var out []scriptEvent
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if _, js, ok := strings.Cut(sc.Text(), "PICKYMAN_EVENT "); ok {
			var e scriptEvent
			if json.Unmarshal([]byte(js), &e) == nil {
				out = append(out, e)
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].T < out[b].T })
	return out
}

// trafficPod runs train_ddp.py for job j as a one-rank pod on the real node with the host's
// /usr (python3 and python3-torch) and the project's Python client, read-only; its
// checkpoints go to the host directory ckptDir if set (kept across pods), else to the pod's
// own /tmp.
func trafficPod(node, name string, j trafficJob, url, pyDir, sockDir, ckptDir string, annotations map[string]string) *corev1.Pod {
	hostPath := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	ckptPath := "/tmp/ckpt"
	if ckptDir != "" {
		ckptPath = ckptDir // the same path inside and outside, so that the acknowledged path holds on the host too
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: realNodeTestNS, Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{RealNodeLabel: "true", corev1.LabelHostname: node},
			Tolerations:                   []corev1.Toleration{{Key: RealNodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers: []corev1.Container{{
				Name: "train", Image: torchHostImage, ImagePullPolicy: corev1.PullNever,
				Args: []string{"/opt/pickyman/examples/train_ddp.py", "--epochs", strconv.Itoa(j.epochs), "--steps", "40",
					"--batch", "32", "--dim", "256", "--hidden", "256", "--step-delay", strconv.FormatFloat(j.stepDelay, 'f', -1, 64),
					"--ckpt-dir", ckptPath, "--data-url", url},
				Env: []corev1.EnvVar{
					{Name: "RANK", Value: "0"}, {Name: "WORLD_SIZE", Value: "1"}, {Name: "LOCAL_RANK", Value: "0"},
					{Name: "MASTER_ADDR", Value: "127.0.0.1"}, {Name: "MASTER_PORT", Value: "29500"},
					{Name: agentv1alpha1.EnvSocket, Value: "/var/run/pickyman/" + agentv1alpha1.SocketName},
					{Name: agentv1alpha1.EnvAgentUID, Value: strconv.Itoa(os.Getuid())},
					{Name: "PICKYMAN_POD", Value: realNodeTestNS + "/" + name},
					{Name: "OMP_NUM_THREADS", Value: "1"}, {Name: "PYTHONUNBUFFERED", Value: "1"},
					{Name: "PYTHONDONTWRITEBYTECODE", Value: "1"}, {Name: "HOME", Value: "/tmp"},
					// No /etc/ld.so.cache in the image: the loader's search path, said outright.
					{Name: "LD_LIBRARY_PATH", Value: "/usr/lib/x86_64-linux-gnu"},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "usr", MountPath: "/usr", ReadOnly: true},
					// Debian's alternatives pick the BLAS and LAPACK that torch links (libblas.so.3).
					{Name: "alternatives", MountPath: "/etc/alternatives", ReadOnly: true},
					{Name: "client", MountPath: "/opt/pickyman", ReadOnly: true},
					{Name: "socket", MountPath: "/var/run/pickyman", ReadOnly: true},
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{hostPath("usr", "/usr"), hostPath("alternatives", "/etc/alternatives"), hostPath("client", pyDir), hostPath("socket", sockDir),
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if ckptDir != "" {
		c := &pod.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ckpt", MountPath: ckptDir})
		pod.Spec.Volumes = append(pod.Spec.Volumes, hostPath("ckpt", ckptDir))
	}
	return pod
}

// buildAgent builds the agent's command.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pickyman-agent")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/pickyman/pickyman/agent/cmd/pickyman-agent")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the agent: %v\n%s", err, out)
	}
	return bin
}

// startAgent runs the agent for node with the cluster's kubeconfig and the fake GPU backend
// (no GPU here), until the test ends.
func startAgent(ctx context.Context, t *testing.T, bin, kubeconfig, node, sockDir, logPath string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(actx, bin, "--node="+node, "--socket-dir="+sockDir, "--proc=/proc", "--gpu-backend=fake",
		"--metrics-addr=0", "--label-node=false")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		acancel()
		<-done
		logf.Close()
	})
	sock := filepath.Join(sockDir, agentv1alpha1.SocketName)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(sock)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the agent did not listen on %s: log:\n%s", sock, readFile(logPath))
	}
}

// podDir is a directory for the pods to mount, removed when the test ends: made by
// os.MkdirTemp (t.TempDir's parent is open to its owner only) and opened to every user (0755).
func podDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
