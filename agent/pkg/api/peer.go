package api

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PodResolver maps a process to the UID of the pod it runs in.
type PodResolver interface {
	PodUID(pid int32) (string, error)
}

// ResolverFunc adapts a function to PodResolver.
type ResolverFunc func(pid int32) (string, error)

// PodUID implements PodResolver.
func (f ResolverFunc) PodUID(pid int32) (string, error) { return f(pid) }

// CgroupResolver reads /proc/<pid>/cgroup under Root (normally /proc, the host's, so the agent
// needs the host PID namespace). Kubelet puts a pod's containers in a cgroup whose path holds
// the pod UID: ".../kubepods-burstable-pod<uid with _>.slice/..." with the systemd driver,
// ".../kubepods/burstable/pod<uid>/..." with cgroupfs.
type CgroupResolver struct {
	Root string
}

var _ PodResolver = CgroupResolver{}

var podCgroup = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)

// PodUID implements PodResolver.
func (c CgroupResolver) PodUID(pid int32) (string, error) {
	f, err := os.Open(filepath.Join(c.Root, strconv.Itoa(int(pid)), "cgroup"))
	if err != nil {
		return "", fmt.Errorf("cgroup of pid %d: %w", pid, err)
	}
	defer f.Close()
	return ParseCgroup(bufio.NewScanner(f), pid)
}

// ParseCgroup finds the pod UID in the lines of a /proc/<pid>/cgroup file.
func ParseCgroup(sc *bufio.Scanner, pid int32) (string, error) {
	for sc.Scan() {
		if m := podCgroup.FindStringSubmatch(sc.Text()); m != nil {
			return strings.ReplaceAll(m[1], "_", "-"), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("pid %d is not in a pod's cgroup", pid)
}

// PeerPID returns the pid of the process at the other end of a Unix socket (SO_PEERCRED).
// The kernel records it when the peer connects, so the peer cannot forge it.
func PeerPID(c *net.UnixConn) (int32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return cred.Pid, nil
}
