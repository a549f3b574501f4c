package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessStartsAgainAsItWas: a process read from its pid file and /proc, killed, starts
// again with the same command line, environment and working directory, appending to the same
// log, and its pid file names the new process.
func TestProcessStartsAgainAsItWas(t *testing.T) {
	dir := t.TempDir()
	log, pidFile := filepath.Join(dir, "p.log"), filepath.Join(dir, "p.pid")
	script := `echo "started in $(pwd) with $CHAOS_MARK"; sleep 60; true`
	pid, err := startDetached("/bin/sh", []string{"-c", script}, []string{"CHAOS_MARK=m1"}, log, pidFile)
	if err != nil {
		t.Fatal(err)
	}
	// Each start is its own session and process group: the shells' sleeps go with them.
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(-readPid(pidFile), syscall.SIGKILL)
	})
	waitFor(t, func() bool { return strings.Count(readFile(log), "started") == 1 })
	p, err := readProcess("p", pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if p.Log != log {
		t.Errorf("log %q, want %q", p.Log, log)
	}
	if !slices.Contains(p.Env, "CHAOS_MARK=m1") {
		t.Errorf("environment lacks CHAOS_MARK=m1")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if err := stopPid(pid, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if got := readPid(pidFile); got == pid || !alive(got) {
		t.Fatalf("pid file names %d (old %d, alive %v)", got, pid, alive(got))
	}
	again, err := readProcess("p", pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Argv, p.Argv) || again.Dir != p.Dir {
		t.Errorf("started again as %q in %s, want %q in %s", again.Argv, again.Dir, p.Argv, p.Dir)
	}
	waitFor(t, func() bool { return strings.Count(readFile(log), "started in "+p.Dir+" with m1") == 2 })
}

// TestPidFilesNamesEveryProcess: the cluster's pid files, named as the chaos helpers report
// them (a real node's by node and component).
func TestPidFilesNamesEveryProcess(t *testing.T) {
	o := Options{Home: t.TempDir(), Name: "c"}
	for _, f := range []string{"pids/etcd.pid", "pids/kube-apiserver.pid", "training-operator.pid",
		"real-nodes/kube-proxy.pid", "real-nodes/c-node-0/kubelet.pid"} {
		path := filepath.Join(o.Workdir(), f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for n := range o.pidFiles() {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"c-node-0/kubelet", "etcd", "kube-apiserver", "kube-proxy", "training-operator"}
	if !slices.Equal(names, want) {
		t.Errorf("pid files %v, want %v", names, want)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("condition not met in 5 s")
}
