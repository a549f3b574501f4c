package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startDetached starts a command in its own session, so it outlives the caller, with stdout
// and stderr appended to logPath, and records its pid in pidPath.
func startDetached(bin string, args []string, env []string, logPath, pidPath string) (int, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return runDetached(cmd, logPath, pidPath, "\n")
}

// runDetached starts cmd in a session of its own, its output appended to logPath (none if
// empty), and writes its pid to pidPath followed by end.
func runDetached(cmd *exec.Cmd, logPath, pidPath, end string) (int, error) {
	if logPath != "" {
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return 0, err
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	// The child is reaped by init once the caller exits; release it here.
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(pid)+end), 0o644); err != nil {
		return pid, err
	}
	return pid, nil
}

// readPid returns the pid recorded in path, or 0.
func readPid(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// alive says whether a process runs with this pid (a zombie counts as gone).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// stopPid sends SIGTERM, waits up to grace, then SIGKILL; it returns once the process is gone.
func stopPid(pid int, grace time.Duration) error {
	if !alive(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 100 {
		if !alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("process %d survives SIGKILL", pid)
}

// freePort returns a loopback TCP port that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// listening says whether something accepts TCP connections on 127.0.0.1:port.
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// pidsIn reads every *.pid file of dir.
func pidsIn(dir string) map[string]int {
	out := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	for _, f := range files {
		if pid := readPid(f); pid > 0 {
			out[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
		}
	}
	return out
}

// listeningPorts returns the local TCP ports a process listens on, from /proc.
func listeningPorts(pid int) []int {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// local_address rem_address st ... inode; st 0A is LISTEN.
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports = append(ports, int(p))
			}
		}
	}
	return ports
}

var errNotRunning = errors.New("not running")
