package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Faults that the chaos specs inject into a running cluster (docs/reliability.md): the
// control plane restarted, and a PickyMan pod cut off from the API server.

// localProcess is a process of the cluster as its pid file records it, with what it takes to
// start it again the same way: its command line, environment, working directory and log.
type localProcess struct {
	Name, PidFile string
	Pid           int
	Argv, Env     []string
	Dir, Log      string
	// newline: the pid file ends with one. kwokctl writes its pid files without one and
	// reads them back strictly (a "123\n" reads as not running), so the format is kept.
	newline bool
}

// pidFiles returns the pid file of every local process of the cluster, by name: kwokctl's
// control plane and the testbed's controllers (<workdir>/pids, <workdir>/*.pid), the real
// nodes' containerd and kubelet ("<node>/<component>") and kube-proxy.
func (o Options) pidFiles() map[string]string {
	out := map[string]string{}
	for _, pattern := range []string{
		filepath.Join(o.Workdir(), "pids", "*.pid"),
		filepath.Join(o.Workdir(), "*.pid"),
		filepath.Join(o.realNodesDir(), "*.pid"),
		filepath.Join(o.realNodesDir(), "*", "*.pid"),
	} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".pid")
			if filepath.Dir(filepath.Dir(f)) == o.realNodesDir() {
				name = filepath.Base(filepath.Dir(f)) + "/" + name
			}
			out[name] = f
		}
	}
	return out
}

// readProcess reads how the live process of pidFile was started, from /proc.
func readProcess(name, pidFile string) (localProcess, error) {
	p := localProcess{Name: name, PidFile: pidFile}
	if data, err := os.ReadFile(pidFile); err == nil {
		p.Pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		p.newline = bytes.HasSuffix(data, []byte("\n"))
	}
	if !alive(p.Pid) {
		return p, fmt.Errorf("%s: not running", name)
	}
	dir := filepath.Join("/proc", strconv.Itoa(p.Pid))
	// A process that has just been started reads as an empty command line for a moment: exec
	// closes the starter's pipe, which ends exec.Cmd.Start, before it sets up the new
	// program's arguments. Read again until they are there, for at most a second.
	var cmdline []byte
	for range 100 {
		var err error
		if cmdline, err = os.ReadFile(filepath.Join(dir, "cmdline")); err != nil {
			return p, fmt.Errorf("%s: %w", name, err)
		}
		if len(cmdline) > 0 || !alive(p.Pid) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	environ, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	p.Argv = splitNul(cmdline)
	p.Env = splitNul(environ)
	if len(p.Argv) == 0 {
		return p, fmt.Errorf("%s: empty command line", name)
	}
	if p.Dir, err = os.Readlink(filepath.Join(dir, "cwd")); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	// Its log is where its standard output goes, when that is a file.
	if out, err := os.Readlink(filepath.Join(dir, "fd", "1")); err == nil && filepath.IsAbs(out) && !strings.HasPrefix(out, "/dev/") {
		p.Log = out
	}
	return p, nil
}

func splitNul(b []byte) []string {
	var out []string
	for _, f := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

// start starts the process again as it was started, in its own session, appending to its log,
// and records the new pid in its pid file.
func (p *localProcess) start() error {
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Env, cmd.Dir = p.Env, p.Dir
	end := ""
	if p.newline {
		end = "\n"
	}
	pid, err := runDetached(cmd, p.Log, p.PidFile, end)
	if err != nil {
		return fmt.Errorf("start %s again: %w", p.Name, err)
	}
	p.Pid = pid
	return nil
}

// Outage is what RestartControlPlane did.
type Outage struct {
	// Down is from the kill until the API server was ready again, at Ready.
	Down  time.Duration
	Ready time.Time
	// Revived are the other processes of the cluster that exited because of the outage (a
	// controller that could not renew its leader lease exits) and were started again.
	Revived []string
}

// ControlPlaneProcesses are the processes RestartControlPlane kills, in the order they are
// started again.
var ControlPlaneProcesses = []string{"etcd", "kube-apiserver"}

// RestartControlPlane crashes the control plane's host: etcd and the API server are killed
// (SIGKILL), stay down for down, and are started again as they were (etcd keeps its data
// directory). Once the API server is ready it watches the cluster's other local processes
// for settle and starts again, as a kubelet restarts a static pod, each that exited
// meanwhile; they are named in the Outage. PickyMan's pods are not among them: their own
// kubelet restarts them.
func (o Options) RestartControlPlane(ctx context.Context, c *Clients, down, settle time.Duration) (Outage, error) {
	files := o.pidFiles()
	procs := map[string]*localProcess{}
	for name, f := range files {
		if !alive(readPid(f)) {
			continue
		}
		p, err := readProcess(name, f)
		if err != nil {
			return Outage{}, err
		}
		procs[name] = &p
	}
	for _, name := range ControlPlaneProcesses {
		if procs[name] == nil {
			return Outage{}, fmt.Errorf("restart the control plane: %s is not running (pid file %s)", name, files[name])
		}
	}
	killed := time.Now()
	for _, name := range ControlPlaneProcesses {
		_ = syscall.Kill(procs[name].Pid, syscall.SIGKILL)
	}
	for _, name := range ControlPlaneProcesses {
		if err := stopPid(procs[name].Pid, 5*time.Second); err != nil {
			return Outage{}, err
		}
	}
	select {
	case <-ctx.Done():
		return Outage{}, ctx.Err()
	case <-time.After(down):
	}
	for _, name := range ControlPlaneProcesses {
		if err := procs[name].start(); err != nil {
			return Outage{}, err
		}
	}
	if err := c.WaitReady(ctx, o.Timeout); err != nil {
		return Outage{}, fmt.Errorf("the API server is not ready again after %v: %w\n%s", o.Timeout, err,
			tail(readFile(procs["kube-apiserver"].Log), 20))
	}
	out := Outage{Ready: time.Now()}
	out.Down = out.Ready.Sub(killed)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, settle, true, func(context.Context) (bool, error) {
		for name, p := range procs {
			if slices.Contains(ControlPlaneProcesses, name) || alive(p.Pid) {
				continue
			}
			if err := p.start(); err != nil {
				return false, err
			}
			out.Revived = append(out.Revived, name)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		return out, err
	}
	slices.Sort(out.Revived)
	return out, ctx.Err()
}

// Partition cuts a pod of the installed product off from the API server, as a network
// partition between its node and the control plane would: the host drops every packet that the
// pod's address sends to the API server's port (the packets of the connections it holds too).
// Only a pod on a real node has an address of its own; heal removes the rule.
func (o Options) Partition(podIP string) (heal func() error, err error) {
	ip, err := netip.ParseAddr(podIP)
	if err != nil || !netip.MustParsePrefix(RealNodePodCIDR).Contains(ip) {
		return nil, fmt.Errorf("partition: %q is not a real node's pod address (%s)", podIP, RealNodePodCIDR)
	}
	server, err := o.apiServerURL()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(server)
	if err != nil || u.Port() == "" {
		return nil, fmt.Errorf("partition: API server address %q has no port", server)
	}
	// Pods reach the API server at the `kubernetes` Service, which kube-proxy turns into the
	// host's address and this port before the packet reaches the host's INPUT chain.
	rule := []string{"INPUT", "-s", ip.String() + "/32", "-p", "tcp", "--dport", u.Port(), "-m", "comment", "--comment", o.partitionComment(), "-j", "DROP"}
	if out, err := run("iptables", append([]string{"-w", "-I"}, rule...)...); err != nil {
		return nil, fmt.Errorf("partition %s: %w: %s", podIP, err, out)
	}
	return func() error {
		out, err := run("iptables", append([]string{"-w", "-D"}, rule...)...)
		if err != nil && !strings.Contains(out, "does a matching rule exist") {
			return errors.Join(fmt.Errorf("heal the partition of %s: %w", podIP, err), errors.New(out))
		}
		return nil
	}, nil
}

// partitionComment marks the cluster's partition rules, so that taking its real nodes down
// removes one that a test left behind (pod addresses are reused by the next cluster).
func (o Options) partitionComment() string { return realNodeComment + "-partition:" + o.Name }

// healPartitions removes every partition rule of the cluster.
func (o Options) healPartitions() {
	out, err := run("iptables", "-w", "-S", "INPUT")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "-A INPUT ") || !strings.Contains(line, o.partitionComment()) {
			continue
		}
		// iptables -S quotes nothing here: the rule's words are its arguments.
		args := strings.Fields(strings.TrimPrefix(line, "-A "))
		_, _ = run("iptables", append([]string{"-w", "-D"}, args...)...)
	}
}
