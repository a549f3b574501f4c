//go:build torch

package torch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pickyman/pickyman/agent/pkg/api"
	"github.com/pickyman/pickyman/agent/pkg/coord"
	"github.com/pickyman/pickyman/agent/test/kubetest"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// Python is Debian's interpreter, which has python3-torch (the default python3 may not).
const python = "/usr/bin/python3"

const (
	node      = "gpu-node-1"
	namespace = "team"
	podName   = "mnist-worker-0"
	epochs    = 5
)

// ancestry maps a process to a pod by its ancestors: every process started under a
// registered launcher pid belongs to that launcher's pod (standing in for the pod cgroup).
type ancestry struct {
	mu    sync.Mutex
	roots map[int32]string
}

func (a *ancestry) set(pid int, uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roots = map[int32]string{int32(pid): uid}
}

func (a *ancestry) PodUID(pid int32) (string, error) {
	for p := pid; p > 1; {
		a.mu.Lock()
		uid, ok := a.roots[p]
		a.mu.Unlock()
		if ok {
			return uid, nil
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return "", err
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after the last ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		ppid, err := strconv.Atoi(fields[1])
		if err != nil {
			return "", err
		}
		p = int32(ppid)
	}
	return "", fmt.Errorf("pid %d is not in a pod", pid)
}

// event is one PICKYMAN_EVENT line of the training script.
type event struct {
	Event string  `json:"event"`
	T     float64 `json:"t"`
	Rank  int     `json:"rank"`
	Epoch int32   `json:"epoch"`
	Hash  string  `json:"hash"`
	// World is the world size of the run (checkpoint, loaded, sized); WrittenWorld the size
	// the loaded checkpoint was written at; Steps the steps per epoch at this size.
	World        int    `json:"world"`
	WrittenWorld int    `json:"written_world"`
	Steps        int    `json:"steps"`
	Path         string `json:"path"`
	Bytes        int64  `json:"bytes"`
	// Step is the step a checkpoint resumes at (checkpoint, loaded, suspended, epoch_begin);
	// Mode why a rank suspended (boundary, now, sigterm); Code a rank's exit code (exit).
	Step int    `json:"step"`
	Mode string `json:"mode"`
	Code int    `json:"code"`
}

func (e event) time() time.Time { return time.Unix(0, int64(e.T*1e9)) }

// run is one torchrun launch.
type run struct {
	cmd    *exec.Cmd
	start  time.Time
	mu     sync.Mutex
	events []event
	out    strings.Builder
	done   chan struct{}
}

func (r *run) find(name string, epoch int32) (event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Event == name && e.Rank == 0 && (epoch < 0 || e.Epoch == epoch) {
			return e, true
		}
	}
	return event{}, false
}

// count is the number of ranks that emitted the event.
func (r *run) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Event == name {
			n++
		}
	}
	return n
}

func (r *run) waitFor(t *testing.T, name string, epoch int32, timeout time.Duration) event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if e, ok := r.find(name, epoch); ok {
			return e
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s event for epoch %d within %v; output:\n%s", name, epoch, timeout, r.output())
	return event{}
}

func (r *run) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// launch starts a torchrun job of nproc workers of the example script as pod uid.
func launch(t *testing.T, res *ancestry, uid, sock, ckptDir string, nproc int) *run {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "python", "examples", "train_ddp.py")
	cmd := exec.Command(python, "-m", "torch.distributed.run",
		// -r 1 -t 1: Debian's torch 1.13 on Python 3.11 cannot parse the default "0"
		// (enum iteration skips zero flags); redirect and tee stdout instead.
		"--nnodes=1", fmt.Sprintf("--nproc_per_node=%d", nproc), "--monitor_interval=0.2", "-r", "1", "-t", "1", "--log_dir", filepath.Join(ckptDir, "..", "logs-"+uid), "--master_addr=127.0.0.1", fmt.Sprintf("--master_port=%d", freePort(t)),
		script, "--epochs", strconv.Itoa(epochs), "--steps", "12", "--step-delay", "0.05",
		"--dim", "256", "--hidden", "512", "--ckpt-dir", ckptDir)
	cmd.Env = append(os.Environ(), agentv1alpha1.EnvSocket+"="+sock, "PICKYMAN_POD="+namespace+"/"+podName,
		// The agent runs in this process: the client checks the socket's listener is it.
		agentv1alpha1.EnvAgentUID+"="+strconv.Itoa(os.Getuid()),
		"OMP_NUM_THREADS=1", "PYTHONUNBUFFERED=1")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	// The launcher and its workers in a process group of their own, killed as a group at the
	// end; and Wait returns once the launcher has exited even if a stray worker still holds
	// the output open (it is killed with the group).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	r := &run{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.out.WriteString(line + "\n")
			if _, js, ok := strings.Cut(line, "PICKYMAN_EVENT "); ok {
				var e event
				if json.Unmarshal([]byte(js), &e) == nil {
					r.events = append(r.events, e)
				}
			}
			r.mu.Unlock()
		}
	}()
	r.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	res.set(cmd.Process.Pid, uid)
	go func() {
		// A non-zero exit is expected (wait reads the code from ProcessState); any other
		// error, such as output still held open after WaitDelay, is worth a line in the log.
		var exit *exec.ExitError
		if err := cmd.Wait(); err != nil && !errors.As(err, &exit) {
			t.Logf("torchrun %s: %v", uid, err)
		}
		pw.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group: launcher and workers
		<-r.done
	})
	return r
}

// exitCodes waits for the launcher and returns the workers' exit codes: torchrun itself
// exits 1 when a worker exits non-zero and reports each worker's code in its error summary.
func (r *run) wait(t *testing.T, timeout time.Duration) (launcher int, workers string) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		t.Fatalf("torchrun did not exit within %v; output:\n%s", timeout, r.output())
	}
	return r.cmd.ProcessState.ExitCode(), r.output()
}

func makePod(uid string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: podName, UID: types.UID(uid), Annotations: ann},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func annotations(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: podName}, p); err != nil {
		t.Fatal(err)
	}
	return p.Annotations
}

func relErr(measured, predicted time.Duration) float64 {
	return (measured - predicted).Seconds() / measured.Seconds()
}

func TestTorchCheckpointAndResume(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available()").CombinedOutput(); err != nil {
		t.Fatalf("PyTorch is not usable with %s (run `make agent-deps`): %v\n%s", python, err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmp := t.TempDir()
	sockDir, err := os.MkdirTemp("", "pmtorch")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, agentv1alpha1.SocketName)
	ckptDir := filepath.Join(tmp, "ckpt")

	// The agent: registry, coordinator on a fake API server, socket server.
	kube := fake.NewClientBuilder().
		WithObjects(makePod("uid-run1", nil)).
		WithIndex(&corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	co := &coord.Coordinator{Client: kube, Node: node, Clock: clock.RealClock{}, Log: testr.New(t), Resync: 100 * time.Millisecond}
	reg := api.NewRegistry(clock.RealClock{}, co)
	co.Registry = reg
	res := &ancestry{}
	l, err := api.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &api.Server{Registry: reg, Resolver: res}
	wg := serveAgent(ctx, t, srv, l, co)
	defer wg.Wait()
	defer cancel()

	// 1. Run until epoch 2 is under way, then ask for a boundary checkpoint mid-epoch, as
	//    the operator does: an annotation on the pod.
	r1 := launch(t, res, "uid-run1", sock, ckptDir, 2)
	e0 := r1.waitFor(t, "epoch_begin", 0, 300*time.Second)
	b1 := r1.waitFor(t, "epoch_begin", 1, 300*time.Second)
	b2 := r1.waitFor(t, "epoch_begin", 2, 300*time.Second)
	epochTime := b2.time().Sub(b1.time())
	time.Sleep(epochTime * 2 / 5)
	req := agentv1alpha1.CheckpointRequest{ID: "preempt-1", Mode: agentv1alpha1.ModeBoundary, Deadline: time.Now().Add(time.Minute).UTC()}
	val, _ := json.Marshal(req)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(val)}}})
	tReq := time.Now()
	if err := kube.Patch(ctx, makePod("", nil), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	code, out := r1.wait(t, 600*time.Second)
	tFree := time.Now()
	// torchrun exits 1 when a worker exits non-zero and names the first one's exit code.
	if code != 1 || !strings.Contains(out, "exitcode  : "+strconv.Itoa(agentv1alpha1.ExitSuspended)) || r1.count("suspended") != 2 {
		t.Fatalf("run 1 exited %d, want both workers suspended and exiting %d; output:\n%s", code, agentv1alpha1.ExitSuspended, out)
	}
	if _, ok := r1.find("done", -1); ok {
		t.Fatal("run 1 finished instead of suspending")
	}
	// The epoch in progress when the request came (epoch 2 unless the machine is slow).
	cur := b2
	for e := int32(3); e < epochs; e++ {
		if b, ok := r1.find("epoch_begin", e); ok && !b.time().After(tReq) {
			cur = b
		}
	}
	ckpt := r1.waitFor(t, "checkpoint", -1, time.Second)
	if ckpt.Epoch != cur.Epoch+1 {
		t.Fatalf("checkpoint holds epoch %d, want %d (the request came during epoch %d); output:\n%s", ckpt.Epoch, cur.Epoch+1, cur.Epoch, out)
	}
	var ack agentv1alpha1.CheckpointAck
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, ok := annotations(t, kube)[agentv1alpha1.AnnotationCheckpointAck]; ok {
			if err := json.Unmarshal([]byte(v), &ack); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no acknowledgement annotation on the pod")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ack.RequestID != req.ID || ack.Epoch != ckpt.Epoch || ack.Path != ckpt.Path || ack.Bytes != ckpt.Bytes || ack.Bytes == 0 {
		t.Fatalf("ack %+v does not match request %s and checkpoint %+v", ack, req.ID, ckpt)
	}
	var prog agentv1alpha1.Progress
	if err := json.Unmarshal([]byte(annotations(t, kube)[agentv1alpha1.AnnotationProgress]), &prog); err != nil || prog.EpochsDone != ckpt.Epoch || prog.ReadBytes == 0 {
		t.Errorf("progress annotation %+v (%v), want %d epochs done and bytes read", prog, err, ckpt.Epoch)
	}

	// 2. The operator recreates the pod with the resume point; the job resumes.
	if err := kube.Delete(ctx, makePod("", nil)); err != nil {
		t.Fatal(err)
	}
	rp, _ := json.Marshal(agentv1alpha1.ResumePoint{Epoch: ack.Epoch, Path: ack.Path})
	if err := kube.Create(ctx, makePod("uid-run2", map[string]string{agentv1alpha1.AnnotationResumeFrom: string(rp)})); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p, ok := reg.Pod("uid-run2"); ok && p.Resume.Epoch == ack.Epoch {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not pick up the new pod")
		}
	}
	r2 := launch(t, res, "uid-run2", sock, ckptDir, 2)
	if code, out := r2.wait(t, 600*time.Second); code != agentv1alpha1.ExitDone {
		t.Fatalf("run 2 exited %d, want %d; output:\n%s", code, agentv1alpha1.ExitDone, out)
	}
	loaded := r2.waitFor(t, "loaded", ack.Epoch, time.Second)
	if loaded.Hash != ckpt.Hash {
		t.Fatalf("parameters after loading %s differ from the checkpoint's: %s != %s", ack.Path, loaded.Hash, ckpt.Hash)
	}
	first := r2.waitFor(t, "epoch_begin", -1, time.Second)
	if first.Epoch != ack.Epoch {
		t.Fatalf("run 2 began at epoch %d, want %d", first.Epoch, ack.Epoch)
	}
	if done := r2.waitFor(t, "done", -1, time.Second); done.Epoch != epochs {
		t.Fatalf("run 2 finished at epoch %d, want %d", done.Epoch, epochs)
	}

	// 3. Compare the measured overheads with the overhead model, its parameters learned from
	//    run 1 (start) and a calibration of the checkpoint directory (bandwidths).
	writeBW, readBW := kubetest.CalibrateDir(t, tmp, ack.Bytes)
	start := e0.time().Sub(r1.start) // launch to first epoch: start and warm-up, no load
	model := overhead.New(overhead.Params{Start: start, WriteBW: writeBW, ReadBW: readBW, Grace: 30 * time.Second})
	job := &sched.Job{ID: "j", Model: "mlp", Epochs: epochs, EpochsDone: cur.Epoch, CheckpointBytes: ack.Bytes,
		SinceCheckpoint: tReq.Sub(cur.time())}
	est := model.Estimate(job, epochTime, tReq)
	// The suspend delay is the time from the request to the acknowledgement, when the
	// checkpoint is written and the operator may free the GPUs; the process exit follows.
	suspend := time.Duration(ack.SuspendSeconds * float64(time.Second))
	resume := first.time().Sub(r2.start)
	t.Logf("epoch time %v, phase at request %v, checkpoint %d bytes, write %.0f MB/s, read %.0f MB/s, start %v",
		epochTime.Round(time.Millisecond), job.SinceCheckpoint.Round(time.Millisecond), ack.Bytes, writeBW/1e6, readBW/1e6, start.Round(time.Millisecond))
	t.Logf("suspend delay: measured %v (processes exited after %v), predicted %v, error %+.1f%%",
		suspend.Round(time.Millisecond), tFree.Sub(tReq).Round(time.Millisecond), est.BoundaryDelay().Round(time.Millisecond), 100*relErr(suspend, est.BoundaryDelay()))
	t.Logf("resume time: measured %v, predicted %v, error %+.1f%%",
		resume.Round(time.Millisecond), est.Resume.Round(time.Millisecond), 100*relErr(resume, est.Resume))
	// The suspend waited for the end of the epoch: at least most of the rest of it.
	if rest := epochTime - job.SinceCheckpoint; suspend < rest/2 {
		t.Errorf("suspend took %v, less than half the rest of the epoch %v: it did not finish the epoch", suspend, rest)
	}
	for name, e := range map[string]float64{"suspend": relErr(suspend, est.BoundaryDelay()), "resume": relErr(resume, est.Resume)} {
		if e > 0.75 || e < -0.75 {
			t.Errorf("%s prediction off by %.0f%%", name, 100*e)
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("context ended early")
	}
}

// agentSide is the agent of a torch test: a fake API server holding the pod, the registry and
// coordinator, and the socket server, running until the test ends.
type agentSide struct {
	kube          client.Client
	reg           *api.Registry
	res           *ancestry
	sock, ckptDir string
}

func startAgentSide(t *testing.T, firstUID string) *agentSide {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sockDir, err := os.MkdirTemp("", "pmtorch")
	if err != nil {
		t.Fatal(err)
	}
	a := &agentSide{sock: filepath.Join(sockDir, agentv1alpha1.SocketName), ckptDir: filepath.Join(t.TempDir(), "ckpt"), res: &ancestry{}}
	a.kube = fake.NewClientBuilder().
		WithObjects(makePod(firstUID, nil)).
		WithIndex(&corev1.Pod{}, coord.NodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	co := &coord.Coordinator{Client: a.kube, Node: node, Clock: clock.RealClock{}, Log: testr.New(t), Resync: 100 * time.Millisecond}
	a.reg = api.NewRegistry(clock.RealClock{}, co)
	co.Registry = a.reg
	l, err := api.Listen(a.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &api.Server{Registry: a.reg, Resolver: a.res}
	wg := serveAgent(ctx, t, srv, l, co)
	t.Cleanup(func() { cancel(); wg.Wait(); os.RemoveAll(sockDir) })
	return a
}

// suspendAtBoundary asks the pod for a boundary checkpoint once epoch is under way, waits for
// every worker to exit suspended, and returns the checkpoint event and the acknowledgement.
func (a *agentSide) suspendAtBoundary(t *testing.T, r *run, epoch int32, id string) (event, agentv1alpha1.CheckpointAck) {
	t.Helper()
	r.waitFor(t, "epoch_begin", epoch, 300*time.Second)
	req := agentv1alpha1.CheckpointRequest{ID: id, Mode: agentv1alpha1.ModeBoundary, Deadline: time.Now().Add(time.Minute).UTC()}
	val, _ := json.Marshal(req)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{agentv1alpha1.AnnotationCheckpointRequest: string(val)}}})
	if err := a.kube.Patch(context.Background(), makePod("", nil), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if code, out := r.wait(t, 600*time.Second); code == agentv1alpha1.ExitDone {
		t.Fatalf("the run finished instead of suspending; output:\n%s", out)
	}
	ckpt := r.waitFor(t, "checkpoint", -1, time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ack agentv1alpha1.CheckpointAck
		if v, ok := annotations(t, a.kube)[agentv1alpha1.AnnotationCheckpointAck]; ok && json.Unmarshal([]byte(v), &ack) == nil && ack.RequestID == id {
			if ack.Epoch != ckpt.Epoch || ack.Path != ckpt.Path {
				t.Fatalf("ack %+v does not match checkpoint %+v", ack, ckpt)
			}
			return ckpt, ack
		}
		if time.Now().After(deadline) {
			t.Fatalf("no acknowledgement of %s on the pod", id)
		}
	}
}

// recreate replaces the pod by a new one (uid) with the acknowledged resume point, as the
// operator does on resume, and waits until the agent knows it.
func (a *agentSide) recreate(t *testing.T, uid string, ack agentv1alpha1.CheckpointAck) {
	t.Helper()
	ctx := context.Background()
	if err := a.kube.Delete(ctx, makePod("", nil)); err != nil {
		t.Fatal(err)
	}
	rp, _ := json.Marshal(agentv1alpha1.ResumePoint{Epoch: ack.Epoch, Path: ack.Path})
	if err := a.kube.Create(ctx, makePod(uid, map[string]string{agentv1alpha1.AnnotationResumeFrom: string(rp)})); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p, ok := a.reg.Pod(uid); ok && p.Resume.Epoch == ack.Epoch {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not pick up pod %s", uid)
		}
	}
}

// checkRestored checks that a run loaded the checkpoint into identical parameters at its
// world size and began at the checkpointed epoch with the steps of that size.
func checkRestored(t *testing.T, r *run, ckpt event, world, refWorld int) {
	t.Helper()
	loaded := r.waitFor(t, "loaded", ckpt.Epoch, 300*time.Second)
	if loaded.Hash != ckpt.Hash {
		t.Fatalf("parameters after loading the checkpoint of %d workers on %d differ: %s != %s", ckpt.World, world, loaded.Hash, ckpt.Hash)
	}
	if loaded.World != world || loaded.WrittenWorld != ckpt.World {
		t.Fatalf("loaded event %+v, want world %d from a checkpoint of %d", loaded, world, ckpt.World)
	}
	sized := r.waitFor(t, "sized", -1, time.Second)
	if want := 12 * refWorld / world; sized.Steps != want {
		t.Errorf("%d steps per epoch on %d workers, want %d (the reference size %d's samples)", sized.Steps, world, want, refWorld)
	}
	if first := r.waitFor(t, "epoch_begin", -1, time.Second); first.Epoch != ckpt.Epoch {
		t.Fatalf("began at epoch %d, want %d", first.Epoch, ckpt.Epoch)
	}
}

// TestTorchResizeFromCheckpoint: a job checkpointed by two workers resumes on one (shrink),
// and checkpointed there resumes on two again (grow): each restore gives the parameters of the
// checkpoint exactly, keeps the reference size's samples per epoch, and the job finishes.
func TestTorchResizeFromCheckpoint(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available()").CombinedOutput(); err != nil {
		t.Fatalf("PyTorch is not usable with %s (run `make agent-deps`): %v\n%s", python, err, out)
	}
	a := startAgentSide(t, "uid-r1")

	r1 := launch(t, a.res, "uid-r1", a.sock, a.ckptDir, 2)
	ckpt1, ack1 := a.suspendAtBoundary(t, r1, 1, "shrink")
	if ckpt1.World != 2 {
		t.Fatalf("first checkpoint written by %d workers, want 2", ckpt1.World)
	}

	a.recreate(t, "uid-r2", ack1)
	r2 := launch(t, a.res, "uid-r2", a.sock, a.ckptDir, 1)
	checkRestored(t, r2, ckpt1, 1, 2)
	ckpt2, ack2 := a.suspendAtBoundary(t, r2, ckpt1.Epoch+1, "grow")
	if ckpt2.World != 1 || ckpt2.Epoch <= ckpt1.Epoch {
		t.Fatalf("second checkpoint %+v, want one written by 1 worker after epoch %d", ckpt2, ckpt1.Epoch)
	}

	a.recreate(t, "uid-r3", ack2)
	r3 := launch(t, a.res, "uid-r3", a.sock, a.ckptDir, 2)
	if code, out := r3.wait(t, 600*time.Second); code != agentv1alpha1.ExitDone {
		t.Fatalf("run 3 exited %d, want %d; output:\n%s", code, agentv1alpha1.ExitDone, out)
	}
	checkRestored(t, r3, ckpt2, 2, 2)
	if done := r3.waitFor(t, "done", -1, time.Second); done.Epoch != epochs {
		t.Fatalf("run 3 finished at epoch %d, want %d", done.Epoch, epochs)
	}
	t.Logf("shrink 2->1 at epoch %d, grow 1->2 at epoch %d, finished at %d; parameters identical after each restore", ckpt1.Epoch, ckpt2.Epoch, epochs)
}

// serveAgent runs the agent's socket server and coordinator until ctx ends; wait on the
// group before the test ends, so that their errors are reported.
func serveAgent(ctx context.Context, t *testing.T, srv *api.Server, l *net.UnixListener, co *coord.Coordinator) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ctx, l); err != nil {
			t.Errorf("agent server: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := co.Run(ctx); err != nil {
			t.Errorf("coordinator: %v", err)
		}
	}()
	return &wg
}
