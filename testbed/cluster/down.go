package cluster

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Down stops the training-operator, deletes the kwokctl cluster and its files, and then
// verifies that none of the cluster's processes is alive and none of their ports is open.
// Down on a cluster that does not exist does nothing.
func Down(ctx context.Context, o Options) error {
	if _, err := os.Stat(o.Workdir()); os.IsNotExist(err) {
		return nil
	}
	// 1. Record what runs, to verify afterwards.
	pids := o.recordedPids(true)
	ports := map[int]string{}
	for name, pid := range pids {
		for _, p := range listeningPorts(pid) {
			ports[p] = name
		}
	}
	// 2. The operators and the agent first, so they do not log errors about a vanished API
	// server.
	for _, c := range []string{ComponentOperator, ComponentAgent} {
		if pid := pids[c]; pid > 0 {
			if err := stopPid(pid, 10*time.Second); err != nil {
				return fmt.Errorf("stop %s: %w", c, err)
			}
		}
	}
	for _, c := range []string{KueueComponent, TrainerComponent, JobSetComponent, "training-operator", kubeRayComponent, StorageComponent} {
		if pid := pids[c]; pid > 0 {
			if err := stopPid(pid, 10*time.Second); err != nil {
				return fmt.Errorf("stop %s: %w", c, err)
			}
		}
	}
	// 3. The real nodes while the API server still runs (their pods are deleted first), then
	// the control plane and the workdir.
	if err := o.StopRealNodes(ctx); err != nil {
		return fmt.Errorf("%w (the control plane still runs; run down again once they are gone)", err)
	}
	if _, err := os.Stat(o.Binary("kwokctl")); err == nil {
		if _, err := o.kwokctl(ctx, "delete", "cluster", "--name", o.Name); err != nil {
			return err
		}
	}
	// 4. Whatever survived (kwokctl missing or failing) is stopped by pid.
	for _, pid := range pids {
		_ = stopPid(pid, 5*time.Second)
	}
	if err := os.RemoveAll(o.Workdir()); err != nil {
		return err
	}
	return verifyGone(pids, ports)
}

// verifyGone fails when a process is still alive or a port still accepts connections.
func verifyGone(pids map[string]int, ports map[int]string) error {
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = left[:0]
		for name, pid := range pids {
			if alive(pid) {
				left = append(left, fmt.Sprintf("process %s (pid %d)", name, pid))
			}
		}
		for port, name := range ports {
			if listening(port) {
				left = append(left, fmt.Sprintf("port %d (%s)", port, name))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		sort.Strings(left)
		return fmt.Errorf("still running after down: %s", strings.Join(left, ", "))
	}
	return nil
}
