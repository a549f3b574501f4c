package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// A process read right after it was started has its command line: exec ends
// exec.Cmd.Start before the new program's arguments are set up, and the chaos restart and
// TestPidFileKeepsItsFormat read a process at once.
func TestReadProcessJustStarted(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		pidFile := filepath.Join(dir, strconv.Itoa(i)+".pid")
		pid, err := startDetached("/bin/sh", []string{"-c", "sleep 60; true"}, nil, "", pidFile)
		if err != nil {
			t.Fatal(err)
		}
		p, err := readProcess("p", pidFile)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if len(p.Argv) != 3 || p.Argv[0] != "/bin/sh" {
			t.Fatalf("start %d: command line %q, want /bin/sh -c ...", i, p.Argv)
		}
	}
}

// TestPidFileKeepsItsFormat: a process started again rewrites its pid file as it was written.
// kwokctl writes "123" and reads it back with a strict integer parse; "123\n" made it take etcd
// and the API server for stopped and start second copies on the next `cluster up`.
func TestPidFileKeepsItsFormat(t *testing.T) {
	for name, newline := range map[string]bool{"kwokctl's, no newline": false, "the testbed's, a newline": true} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			log, pidFile := filepath.Join(dir, "p.log"), filepath.Join(dir, "p.pid")
			pid, err := startDetached("/bin/sh", []string{"-c", "sleep 60; true"}, nil, log, pidFile)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(-readPid(pidFile), syscall.SIGKILL)
			})
			if !newline {
				if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, err := readProcess("p", pidFile)
			if err != nil {
				t.Fatal(err)
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			if err := stopPid(pid, time.Second); err != nil {
				t.Fatal(err)
			}
			if err := p.start(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			want := strconv.Itoa(p.Pid)
			if newline {
				want += "\n"
			}
			if string(data) != want {
				t.Errorf("pid file %q, want %q", data, want)
			}
		})
	}
}
