package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// StageFiles lists the kwok Stage files of dir (every .yaml but kustomization.yaml), sorted.
func StageFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no kwok stage files in %s", dir)
	}
	sort.Strings(out)
	return out, nil
}

// createArgs returns kwokctl's arguments to create (or resume) the cluster with every binary
// taken from BinDir and the kwok stages from StagesDir. kwokctl replaces its default stages
// when a configuration names any. The kubeconfig stays in the workdir: kwokctl leaves the
// user's ~/.kube/config alone.
func (o Options) createArgs() ([]string, error) {
	files, err := StageFiles(o.StagesDir)
	if err != nil {
		return nil, err
	}
	args := []string{"create", "cluster", "--name", o.Name, "--runtime", "binary",
		"--kubeconfig", "", "--wait", o.Timeout.String()}
	for _, f := range files {
		args = append(args, "--config", f)
	}
	for _, b := range ControlPlaneBinaries {
		args = append(args, b.Flag, o.Binary(b.Name))
	}
	if o.RealNodes > 0 {
		extra, err := o.realNodeCreateArgs()
		if err != nil {
			return nil, err
		}
		args = append(args, extra...)
	}
	return args, nil
}

// kwokctl runs kwokctl with KWOK_WORKDIR set to Home and returns its combined output.
func (o Options) kwokctl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, o.Binary("kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+o.Home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args[:2], " "), err, tail(out.String(), 40))
	}
	return out.String(), nil
}

// componentLogs names the log file of each control-plane component of the cluster.
func (o Options) componentLogs() map[string]string {
	logs := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(o.Workdir(), "logs", "*.log"))
	for _, f := range files {
		logs[strings.TrimSuffix(filepath.Base(f), ".log")] = f
	}
	return logs
}

// diagnose names the components whose logs report a failure, with the log's tail.
func (o Options) diagnose() string {
	var b strings.Builder
	logs := o.componentLogs()
	names := make([]string, 0, len(logs))
	for n := range logs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := os.ReadFile(logs[n])
		if err != nil {
			continue
		}
		s := string(data)
		if strings.Contains(s, "panic:") || strings.Contains(s, "E0") || strings.Contains(s, "error") ||
			strings.Contains(s, "Error") || strings.Contains(s, "failed") {
			fmt.Fprintf(&b, "component %s: log %s\n%s\n", n, logs[n], tail(s, 8))
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "component logs are in %s\n", filepath.Join(o.Workdir(), "logs"))
	}
	return b.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
