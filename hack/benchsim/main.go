// Command benchsim measures the simulator (make bench-sim): for each run (a trace on a
// cluster) it simulates every policy in a process of its own and prints, per run and
// policy, the jobs, events per job, scheduling cycles, wall seconds and the process's
// maximum resident set size; then every policy of the run at once in one process, as
// `pickyman simulate` runs them, with that process's wall time and maximum RSS.
//
//	go run ./hack/benchsim -pickyman bin/pickyman -traces ../shared/traces
//
// A run is NAME=TRACE@CLUSTER[@POLICIES]; TRACE is a file under -traces or
// "generated:LOAD" (the generated default trace at offered load LOAD on the cluster's
// GPUs). -runs replaces the default runs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/traces"
)

// defaultRuns are the runs docs/simulator.md reports: an overloaded small cluster, the
// generated trace at twice the cluster's capacity, the full philly.csv on a cluster it
// overloads for months, and the five baselines on the cluster it fits.
const defaultRuns = "tiresias60-1x4=tiresias/60_job.csv@1x4 " +
	"generated-load2-8x8=generated:2@8x8 " +
	"philly-64x8=philly-adaptdl/philly.csv@64x8 " +
	"philly-112x8-baselines=philly-adaptdl/philly.csv@112x8@fifo,sjf,srtf,tiresias,kueue"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchsim:", err)
		os.Exit(1)
	}
}

type spec struct {
	name, trace, cluster, policies string
}

func parseRuns(s string) ([]spec, error) {
	var out []spec
	for _, f := range strings.Fields(s) {
		name, rest, ok := strings.Cut(f, "=")
		parts := strings.Split(rest, "@")
		if !ok || name == "" || len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("run %q: want NAME=TRACE@CLUSTER[@POLICIES]", f)
		}
		sp := spec{name: name, trace: parts[0], cluster: parts[1]}
		if len(parts) == 3 {
			sp.policies = parts[2]
		}
		out = append(out, sp)
	}
	return out, nil
}

// result is what one simulate process reports (results.json) and what it cost.
type result struct {
	policy                 string
	jobs, events, cycles   int64
	wall, procWall, maxRSS float64 // seconds, seconds, MiB
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("benchsim", flag.ContinueOnError)
	bin := fs.String("pickyman", "bin/pickyman", "the pickyman binary")
	dir := fs.String("traces", "../shared/traces", "directory the trace paths are relative to")
	runs := fs.String("runs", defaultRuns, "space-separated runs NAME=TRACE@CLUSTER[@POLICIES]")
	only := fs.String("only", "", "comma-separated run names to measure (empty: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	specs, err := parseRuns(*runs)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "benchsim")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tpolicy\tjobs\tevents/job\tcycles\twall s\tmax RSS MiB\t")
	for _, sp := range specs {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), sp.name) {
			continue
		}
		trace, err := resolve(*bin, *dir, tmp, sp)
		if err != nil {
			return err
		}
		names := strings.Split(sp.policies, ",")
		if sp.policies == "" {
			names = policies.Names()
		}
		for _, p := range names {
			rs, err := simulate(*bin, trace, sp.cluster, p, filepath.Join(tmp, sp.name+"-"+p))
			if err != nil {
				return fmt.Errorf("%s, %s: %w", sp.name, p, err)
			}
			r := rs[0]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%d\t%.2f\t%.0f\t\n", sp.name, r.policy, r.jobs, float64(r.events)/float64(r.jobs), r.cycles, r.wall, r.maxRSS)
		}
		rs, err := simulate(*bin, trace, sp.cluster, strings.Join(names, ","), filepath.Join(tmp, sp.name+"-all"))
		if err != nil {
			return fmt.Errorf("%s, together: %w", sp.name, err)
		}
		var events, jobs int64
		for _, r := range rs {
			events += r.events
			jobs += r.jobs
		}
		fmt.Fprintf(tw, "%s\t%d together\t%d\t%.1f\t\t%.2f\t%.0f\t\n", sp.name, len(rs), rs[0].jobs, float64(events)/float64(jobs), rs[0].procWall, rs[0].maxRSS)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// resolve returns the trace file of a run, generating it for "generated:LOAD".
func resolve(bin, dir, tmp string, sp spec) (string, error) {
	load, ok := strings.CutPrefix(sp.trace, "generated:")
	if !ok {
		p := filepath.Join(dir, sp.trace)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("run %s: %w", sp.name, err)
		}
		return p, nil
	}
	if _, err := strconv.ParseFloat(load, 64); err != nil {
		return "", fmt.Errorf("run %s: load %q: %w", sp.name, load, err)
	}
	c, err := traces.ParseCluster(sp.cluster)
	if err != nil {
		return "", fmt.Errorf("run %s: %w", sp.name, err)
	}
	var gpus int32
	for _, p := range c.Pools {
		gpus += int32(p.Count) * p.GPUs
	}
	path := filepath.Join(tmp, sp.name+".csv")
	cmd := exec.Command(bin, "trace", "generate", "--load", load, "--cluster-gpus", strconv.Itoa(int(gpus)), "--out", path)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("run %s: %s: %w: %s", sp.name, cmd, err, b)
	}
	return path, nil
}

// simulate runs one simulate process and reads its results.json.
func simulate(bin, trace, cluster, names, out string) ([]result, error) {
	cmd := exec.Command(bin, "simulate", "--trace", trace, "--cluster", cluster, "--policies", names, "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", cmd, err, stderr.String())
	}
	procWall := time.Since(start).Seconds()
	var rss float64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Order    []string `json:"order"`
		Policies map[string]struct {
			Jobs     int64   `json:"jobs"`
			Rejected int64   `json:"rejected"`
			Events   int64   `json:"events"`
			Cycles   int64   `json:"cycles"`
			Wall     float64 `json:"wall_s"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	var rs []result
	for _, name := range doc.Order {
		p := doc.Policies[name]
		rs = append(rs, result{policy: name, jobs: p.Jobs + p.Rejected, events: p.Events, cycles: p.Cycles, wall: p.Wall, procWall: procWall, maxRSS: rss})
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no policies in results.json", out)
	}
	return rs, nil
}
