package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Usage is the CPU and memory one process used over a sampling window.
type Usage struct {
	Component string
	Pid       int
	// CPU is the average number of cores used over the window (user + system time / wall).
	CPU float64
	// Wait is the average number of the process's threads that were ready to run but waited
	// for a core over the window (runqueue time / wall, from /proc/<pid>/task/*/schedstat):
	// what a saturated machine withheld from it. Threads that exit within the window are not
	// counted.
	Wait float64
	// RSSMiB is the resident set size at the end of the window; MaxRSSMiB the largest seen.
	RSSMiB, MaxRSSMiB float64
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat on Linux.
const clockTicks = 100

// procTimes returns a process's user+system CPU time, from /proc/<pid>/stat.
func procTimes(pid int) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("pid %d: malformed stat", pid)
	}
	// After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("pid %d: short stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("pid %d: bad utime/stime", pid)
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}

// procWait returns the time a process's threads have waited on a runqueue, the sum over
// its live threads of /proc/<pid>/task/<tid>/schedstat's second field.
func procWait(pid int) (time.Duration, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(data))
		var ns int64
		if len(f) >= 2 {
			ns, err = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) < 2 || err != nil {
			return 0, fmt.Errorf("pid %d: malformed schedstat %q", pid, data)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// procRSS returns a process's resident set size in MiB, from /proc/<pid>/status.
func procRSS(pid int) (float64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

// SampleUsage measures the given processes over d, reading /proc every step.
func SampleUsage(ctx context.Context, pids map[string]int, d, step time.Duration) ([]Usage, error) {
	start := time.Now()
	begin := map[string]time.Duration{}
	beginWait := map[string]time.Duration{}
	usage := map[string]*Usage{}
	for name, pid := range pids {
		t, err := procTimes(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		begin[name] = t
		// A kernel without schedstat leaves Wait at zero.
		beginWait[name], _ = procWait(pid)
		usage[name] = &Usage{Component: name, Pid: pid}
	}
	sample := func() {
		for name, pid := range pids {
			if rss, err := procRSS(pid); err == nil {
				usage[name].RSSMiB = rss
				usage[name].MaxRSSMiB = max(usage[name].MaxRSSMiB, rss)
			}
		}
	}
	sample()
	t := time.NewTicker(step)
	defer t.Stop()
	for done := time.After(d); ; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			sample()
			continue
		case <-done:
		}
		break
	}
	sample()
	wall := time.Since(start)
	out := make([]Usage, 0, len(usage))
	for name, pid := range pids {
		end, err := procTimes(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		usage[name].CPU = float64(end-begin[name]) / float64(wall)
		if w, err := procWait(pid); err == nil {
			usage[name].Wait = max(0, float64(w-beginWait[name])/float64(wall))
		}
		out = append(out, *usage[name])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out, nil
}

// ClusterPids returns the pids of the cluster's processes by component.
func (o Options) ClusterPids() map[string]int {
	pids := o.recordedPids(true)
	for name, pid := range pids {
		if !alive(pid) {
			delete(pids, name)
		}
	}
	if o.installed() {
		maps.Copy(pids, installedPids())
	}
	return pids
}

// PrintUsage writes a table of usage with a total line.
func PrintUsage(w io.Writer, us []Usage) {
	var cpu, rss, wait float64
	fmt.Fprintf(w, "%-24s %8s %10s %10s %10s\n", "component", "cores", "rss MiB", "max MiB", "cpu wait")
	for _, u := range us {
		fmt.Fprintf(w, "%-24s %8.3f %10.1f %10.1f %10.3f\n", u.Component, u.CPU, u.RSSMiB, u.MaxRSSMiB, u.Wait)
		cpu += u.CPU
		rss += u.RSSMiB
		wait += u.Wait
	}
	fmt.Fprintf(w, "%-24s %8.3f %10.1f %10s %10.3f\n", "total", cpu, rss, "", wait)
}

// recordedPids returns the pids the cluster's pid files record, by component: kwokctl's
// control plane, the training-operator and KubeRay's controllers, and with pickyman also
// PickyMan's operator and agent. The processes may have exited.
func (o Options) recordedPids(pickyman bool) map[string]int {
	pids := pidsIn(filepath.Join(o.Workdir(), "pids"))
	files := map[string]string{"training-operator": o.operatorPid(), kubeRayComponent: o.kubeRayPid(), KueueComponent: o.kueuePid(),
		StorageComponent: o.storageFile("pid")}
	if pickyman {
		for _, c := range []string{ComponentOperator, ComponentAgent} {
			files[c] = o.componentFile(c, "pid")
		}
	}
	for name, f := range files {
		if pid := readPid(f); pid > 0 {
			pids[name] = pid
		}
	}
	return pids
}
