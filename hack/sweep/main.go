// Command sweep compares PickyMan settings on one trace over several seeds: each variant is
// a registered policy name with optional arguments (the fields of its arguments in the
// operator's configuration, api/config/v1alpha1: name=value, durations as 10m), and each
// seed replays the trace with its own synthesized fields and overhead noise (the generated
// trace is a different trace per seed). It prints one Markdown table per seed with the
// waiting time, makespan, preemptions, GPU-hours lost and the mean waiting time of the high
// and the low priority class, then each figure's mean and range over the seeds and on how
// many seeds each variant meets the goal of docs/policy.md (against srtf, tiresias and
// fifo, when they are among the variants): the figures behind "Settings compared". With
// -pairs it compares two variants job by job; with -out it writes each seed's report.
//
//	go run ./hack/sweep -trace ../shared/traces/tiresias/60_job.csv \
//	    -cluster 2x4 -seeds 1,2,3 -variants 'pickyman pickyman|promote=0s;aging=0.5 tiresias'
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/report"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	trace := fs.String("trace", "", "trace file; empty uses the generated default trace")
	cluster := fs.String("cluster", "8x8", "cluster spec or cluster file")
	window := fs.String("window", "", "FROM:TO in hours: only jobs submitted in [FROM, TO), shifted to 0")
	seeds := fs.String("seeds", "1", "comma-separated seeds")
	variants := fs.String("variants", "pickyman", "space-separated variants: policy or policy|argument=value;argument=value")
	worst := fs.Int("worst", 0, "with -pairs, also list the N jobs that wait longest under A than under B")
	outDir := fs.String("out", "", "also write each seed's report (results.json, jobs.csv, report.html with the Pareto plot) to DIR/seed-N, the variants named as given")
	pair := fs.String("pairs", "", "A,B: after each seed's table, compare variants A and B job by job (where the mean waits differ)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, err := traces.ParseCluster(*cluster)
	if err != nil {
		return err
	}
	names := strings.Fields(*variants)
	var seedList []int64
	var bySeed [][]seedFigures
	for _, s := range strings.Split(*seeds, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds: %w", err)
		}
		jobs, err := load(*trace, *window, seed)
		if err != nil {
			return err
		}
		cfg := sim.DefaultConfig()
		cfg.Seed = seed
		cmp, err := sim.NewComparison(cl, jobs, names, build, cfg)
		if err != nil {
			return err
		}
		runs, err := cmp.Run(context.Background())
		if err != nil {
			return err
		}
		for i, r := range runs {
			r.Policy = names[i] // variants of one policy would share its name
		}
		if *outDir != "" {
			meta := report.Meta{Trace: orGenerated(*trace), Cluster: *cluster, GPUs: int32(cl.GPUs()), Seed: seed, SynthesizedFields: report.Synthesized(jobs)}
			if _, err := report.Write(filepath.Join(*outDir, fmt.Sprintf("seed-%d", seed)), meta, runs); err != nil {
				return err
			}
		}
		high := map[string]bool{}
		for _, j := range jobs {
			high[j.ID] = j.Priority > traces.PriorityLow
		}
		fmt.Fprintf(out, "\n%s on %s, %d jobs, seed %d. Times in seconds.\n\n", orGenerated(*trace), *cluster, len(jobs), seed)
		fmt.Fprintln(out, "| variant | wait mean | p50 | p95 | p99 | makespan | preempt. | GPU-h lost | high: mean wait | low: mean wait |")
		fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		seedList = append(seedList, seed)
		bySeed = append(bySeed, make([]seedFigures, len(runs)))
		for i, r := range runs {
			s := metrics.Summarize(r)
			bySeed[len(bySeed)-1][i] = figuresOf(s)
			hi, lo := classWaits(r, high)
			fmt.Fprintf(out, "| `%s` | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %.1f | %.0f | %.0f |\n",
				strings.ReplaceAll(names[i], "|", `\|`), s.Wait.Mean, s.Wait.P50, s.Wait.P95, s.Wait.P99, s.Makespan, s.Preemptions, s.GPUHoursLost, hi, lo)
		}
		if *pair != "" {
			a, b, _ := strings.Cut(*pair, ",")
			ia, ib := slices.Index(names, a), slices.Index(names, b)
			if ia < 0 || ib < 0 {
				return fmt.Errorf("-pairs %q: both must be among the variants", *pair)
			}
			pairs(out, a, b, runs[ia], runs[ib])
			if *worst > 0 {
				worstJobs(out, a, b, runs[ia], runs[ib], *worst)
			}
		}
	}
	summary(out, names, seedList, bySeed)
	return nil
}

// build makes the policy of a variant "name|k=v;k=v": each k is a field of the policy's
// arguments in the operator's configuration (configv1.PickyManArgs for pickyman), read as
// the configuration file would read it.
func build(variant string) (sched.Policy, error) {
	name, list, _ := strings.Cut(variant, "|")
	p := configv1.Policy{Name: name}
	if list != "" {
		args := policies.ArgsOf(name)
		if args == policies.ArgsNone {
			return nil, fmt.Errorf("variant %q: policy %s takes no arguments", variant, name)
		}
		fields := map[string]any{}
		for _, kv := range strings.Split(list, ";") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("variant %q: argument %q is not name=value", variant, kv)
			}
			var val any = v
			if json.Valid([]byte(v)) {
				val = json.RawMessage(v) // numbers and booleans as themselves
			}
			fields[k] = val
		}
		doc, err := json.Marshal(map[string]any{"name": name, string(args): fields})
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(doc, &p); err != nil {
			return nil, fmt.Errorf("variant %q: %w", variant, err)
		}
	}
	return policies.New(p, policies.Options{})
}

// load reads the trace (or generates the default one with seed) and applies the window.
func load(path, window string, seed int64) ([]traces.Job, error) {
	var jobs []traces.Job
	if path == "" {
		cfg := traces.DefaultGenerateConfig()
		cfg.Seed = seed
		jobs = traces.Generate(cfg)
	} else {
		r, err := traces.Open(path, traces.Options{Seed: seed})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if jobs, err = traces.Collect(r); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(jobs, func(a, b traces.Job) int { return int(a.Submit - b.Submit) })
	if window == "" {
		return jobs, nil
	}
	from, to, ok := strings.Cut(window, ":")
	lo, err1 := strconv.ParseFloat(from, 64)
	hi, err2 := strconv.ParseFloat(to, 64)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("-window %q: want FROM:TO in hours", window)
	}
	var in []traces.Job
	for _, j := range jobs {
		if j.Submit >= time.Duration(lo*float64(time.Hour)) && j.Submit < time.Duration(hi*float64(time.Hour)) {
			j.Submit -= time.Duration(lo * float64(time.Hour))
			in = append(in, j)
		}
	}
	return in, nil
}

// classWaits returns the mean waiting time of the finished high- and low-class jobs.
func classWaits(r *metrics.Run, high map[string]bool) (hi, lo float64) {
	var hn, ln int
	for _, j := range r.Jobs {
		if j.Rejected {
			continue
		}
		if high[j.ID] {
			hi += j.Wait().Seconds()
			hn++
		} else {
			lo += j.Wait().Seconds()
			ln++
		}
	}
	return hi / float64(max(hn, 1)), lo / float64(max(ln, 1))
}

func orGenerated(path string) string {
	if path == "" {
		return "generated trace"
	}
	return path
}
