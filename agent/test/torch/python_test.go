//go:build torch

package torch

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

// pythonDir is agent/python.
func pythonDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "python")
}

// withoutAgentEnv is the environment without the agent's variables: no PickyMan.
func withoutAgentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, agentv1alpha1.EnvSocket+"=") && !strings.HasPrefix(kv, agentv1alpha1.EnvAgentUID+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// TestPythonClientUnitTests runs the client's standard-library unit tests
// (agent/python/tests): the no-op without an agent, the protocol against a fake agent,
// Preemptible's boundary and now requests, SIGTERM on a real child process, typed API.
func TestPythonClientUnitTests(t *testing.T) {
	cmd := exec.Command(python, "-W", "error::ResourceWarning", "-m", "unittest", "discover", "-v", "-s", filepath.Join(pythonDir(), "tests"))
	cmd.Env = withoutAgentEnv()
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("unit tests failed: %v", err)
	}
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? in`).FindSubmatch(out)
	if m == nil {
		t.Fatal("no test count in the output")
	}
	if n, _ := strconv.Atoi(string(m[1])); n < 13 {
		t.Errorf("ran %d tests, want at least 13", n)
	}
	if strings.Contains(string(out), "skipped") {
		t.Error("a unit test was skipped")
	}
}

// TestPythonPackageInstalls installs the client offline into a fresh virtual environment
// (Debian's setuptools, no build isolation, no index) from a copy of agent/python, and
// imports it from outside the source tree: the installed package, its py.typed marker, and a
// no-op client without an agent.
func TestPythonPackageInstalls(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	// A copy, so that the build's files stay out of the source tree.
	if out, err := exec.Command("cp", "-r", pythonDir(), src).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	for _, d := range []string{"build", "pickyman_agent.egg-info"} {
		os.RemoveAll(filepath.Join(src, d))
	}
	venv := filepath.Join(tmp, "venv")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = tmp
		cmd.Env = append(withoutAgentEnv(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(python, "-m", "venv", "--system-site-packages", venv)
	vpy := filepath.Join(venv, "bin", "python")
	run(vpy, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", src)
	got := run(vpy, "-c", `
import os, pickyman_agent
from pickyman_agent import Client, Preemptible, Suspended, EXIT_SUSPENDED
d = os.path.dirname(pickyman_agent.__file__)
print("file", pickyman_agent.__file__)
print("typed", os.path.exists(os.path.join(d, "py.typed")))
c = Client()
print("connected", c.connected, c.register("", 0, 1))
print("suspended", Suspended("sigterm", 1, 2, "", None).code == EXIT_SUSPENDED)
`)
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		k, v, _ := strings.Cut(l, " ")
		lines[k] = v
	}
	if !strings.HasPrefix(lines["file"], venv+"/lib/") {
		t.Errorf("imported %q, want the package installed in %s", lines["file"], venv)
	}
	if lines["typed"] != "True" {
		t.Errorf("installed package has no py.typed marker:\n%s", got)
	}
	if lines["connected"] != "False ResumePoint(epoch=0, path='', world_size=0, reference_world_size=0)" {
		t.Errorf("client without an agent: %q, want a no-op with a fresh start", lines["connected"])
	}
	if lines["suspended"] != "True" {
		t.Errorf("Suspended's code is not EXIT_SUSPENDED:\n%s", got)
	}
	t.Logf("installed: %s", lines["file"])
}

// TestTorchSigtermCheckpointsAtOnce: the pod of a two-worker torchrun job is deleted
// mid-epoch (SIGTERM to the launcher, as the kubelet sends it to the container). torchrun
// passes SIGTERM to its workers; they save after the current step, at the same step, and
// exit 143 without waiting for the epoch's end. The job then resumes as after a missed
// deadline, the operator's resume point naming the epoch but no checkpoint: it loads the
// SIGTERM checkpoint (its latest record), with identical parameters, at the saved step, and
// finishes.
func TestTorchSigtermCheckpointsAtOnce(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available()").CombinedOutput(); err != nil {
		t.Fatalf("PyTorch is not usable with %s (run `make agent-deps`): %v\n%s", python, err, out)
	}
	a := startAgentSide(t, "uid-s1")
	r1 := launch(t, a.res, "uid-s1", a.sock, a.ckptDir, 2)
	b0 := r1.waitFor(t, "epoch_begin", 0, 300*time.Second)
	b1 := r1.waitFor(t, "epoch_begin", 1, 300*time.Second)
	epochTime := b1.time().Sub(b0.time())
	time.Sleep(epochTime * 2 / 5)
	tSig := time.Now()
	if err := r1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r1.wait(t, 120*time.Second)
	out := r1.output()

	ckpt := r1.waitFor(t, "checkpoint", -1, time.Second)
	const steps = 12
	if ckpt.Step <= 0 || ckpt.Step >= steps {
		t.Fatalf("SIGTERM checkpoint at step %d of epoch %d, want one inside the epoch (0 < step < %d); output:\n%s", ckpt.Step, ckpt.Epoch, steps, out)
	}
	if _, ok := r1.find("epoch_end", ckpt.Epoch); ok {
		t.Fatalf("epoch %d ended before the SIGTERM checkpoint; output:\n%s", ckpt.Epoch, out)
	}
	delay := ckpt.time().Sub(tSig)
	if delay > epochTime {
		t.Errorf("checkpoint %v after SIGTERM, want it within the epoch (%v)", delay, epochTime)
	}
	r1.mu.Lock()
	var suspended, exits []event
	for _, e := range r1.events {
		switch e.Event {
		case "suspended":
			suspended = append(suspended, e)
		case "exit":
			exits = append(exits, e)
		}
	}
	r1.mu.Unlock()
	if len(suspended) != 2 {
		t.Fatalf("%d ranks suspended, want 2; output:\n%s", len(suspended), out)
	}
	for _, s := range suspended {
		if s.Mode != "sigterm" || s.Epoch != ckpt.Epoch || s.Step != ckpt.Step {
			t.Errorf("rank %d suspended %+v, want mode sigterm at epoch %d step %d (the checkpoint's)", s.Rank, s, ckpt.Epoch, ckpt.Step)
		}
	}
	if len(exits) != 2 {
		t.Fatalf("%d ranks reached their exit, want 2; output:\n%s", len(exits), out)
	}
	for _, e := range exits {
		if e.Code != agentv1alpha1.ExitSuspended {
			t.Errorf("rank %d exits %d, want %d", e.Rank, e.Code, agentv1alpha1.ExitSuspended)
		}
	}
	if _, ok := annotations(t, a.kube)[agentv1alpha1.AnnotationCheckpointAck]; ok {
		t.Error("an acknowledgement without a request")
	}
	t.Logf("SIGTERM %v into epoch %d (epoch %v): checkpoint at step %d of %d after %v, %d bytes",
		tSig.Sub(b1.time()).Round(time.Millisecond), b1.Epoch, epochTime.Round(time.Millisecond), ckpt.Step, steps, delay.Round(time.Millisecond), ckpt.Bytes)

	// The operator's resume point after a deadline: the epoch in progress, no path.
	a.recreate(t, "uid-s2", agentv1alpha1.CheckpointAck{Epoch: ckpt.Epoch})
	r2 := launch(t, a.res, "uid-s2", a.sock, a.ckptDir, 2)
	if code, out := r2.wait(t, 600*time.Second); code != agentv1alpha1.ExitDone {
		t.Fatalf("run 2 exited %d, want %d; output:\n%s", code, agentv1alpha1.ExitDone, out)
	}
	loaded := r2.waitFor(t, "loaded", ckpt.Epoch, time.Second)
	if loaded.Hash != ckpt.Hash || loaded.Step != ckpt.Step {
		t.Fatalf("loaded %+v, want the SIGTERM checkpoint's parameters %s at step %d", loaded, ckpt.Hash, ckpt.Step)
	}
	if first := r2.waitFor(t, "epoch_begin", -1, time.Second); first.Epoch != ckpt.Epoch || first.Step != ckpt.Step {
		t.Fatalf("run 2 began at epoch %d step %d, want epoch %d step %d", first.Epoch, first.Step, ckpt.Epoch, ckpt.Step)
	}
	if done := r2.waitFor(t, "done", -1, time.Second); done.Epoch != epochs {
		t.Fatalf("run 2 finished at epoch %d, want %d", done.Epoch, epochs)
	}
}
