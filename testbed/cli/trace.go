package cli

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickyman/pickyman/traces"
)

// newTraceCommand returns `pickyman trace`: generate a synthetic trace, inspect any trace.
func newTraceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Generate synthetic traces and inspect trace files",
	}
	cmd.AddCommand(newTraceGenerateCommand(), newTraceInspectCommand())
	return cmd
}

func newTraceGenerateCommand() *cobra.Command {
	cfg := traces.DefaultGenerateConfig()
	var out string
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write a Philly-like synthetic trace in the pickyman CSV",
		Long: "Write a Philly-like synthetic trace (GPU demand and durations fitted to philly.csv, diurnal\n" +
			"Poisson arrivals, four queues, two priority classes) in the pickyman CSV. With --span 0 the\n" +
			"arrival window is derived so the offered load on --cluster-gpus GPUs is --load.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Jobs <= 0 {
				return fmt.Errorf("--jobs must be positive, got %d", cfg.Jobs)
			}
			jobs := traces.Generate(cfg)
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			if err := traces.WriteCSV(w, jobs); err != nil {
				return err
			}
			last := jobs[len(jobs)-1].Submit
			fmt.Fprintf(cmd.ErrOrStderr(), "generated %d jobs (seed %d), arrivals over %s, offered load %.3f on %d GPUs\n",
				len(jobs), cfg.Seed, last.Round(time.Second), traces.OfferedLoad(jobs, cfg.ClusterGPUs, 0), cfg.ClusterGPUs)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "number of jobs")
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	f.DurationVar(&cfg.Span, "span", 0, "arrival window (0: derived from --load)")
	f.Float64Var(&cfg.Load, "load", cfg.Load, "offered load a derived window aims at")
	f.IntVar(&cfg.ClusterGPUs, "cluster-gpus", cfg.ClusterGPUs, "GPUs the load is measured against")
	f.StringVar(&out, "out", "-", "output file (- for stdout)")
	return cmd
}

func newTraceInspectCommand() *cobra.Command {
	var (
		format  string
		seed    int64
		cluster string
		out     outputFlag
	)
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print a trace's format, jobs, GPU-demand mix, duration percentiles and synthesized fields",
		Long: "Print a trace's format, jobs, GPU-demand mix, duration percentiles and synthesized fields;\n" +
			"with --cluster, the offered load on that cluster. -o json prints the same as one JSON object\n" +
			"(durations and times in seconds).",
		Example: "  pickyman trace inspect ../shared/traces/tiresias/60_job.csv --cluster 16x4\n" +
			"  pickyman trace inspect trace.csv -o json | jq .gpu_hours",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			gpus := 0
			if cluster != "" {
				c, err := traces.ParseCluster(cluster)
				if err != nil {
					return err
				}
				gpus = c.GPUs()
			}
			r, err := traces.Open(args[0], traces.Options{Format: traces.Format(format), Seed: seed})
			if err != nil {
				return err
			}
			defer r.Close()
			s, err := traces.Summarize(r)
			if err != nil {
				return err
			}
			if out.json() {
				return writeJSON(cmd.OutOrStdout(), newTraceSummaryJSON(s, gpus))
			}
			return s.Write(cmd.OutOrStdout(), gpus)
		},
	}
	out.register(cmd)
	f := cmd.Flags()
	f.StringVar(&format, "format", "", "force a format ("+traces.FormatNames()+"); empty detects it")
	f.Int64Var(&seed, "seed", 1, "seed for the synthesized fields")
	f.StringVar(&cluster, "cluster", "", "cluster spec or file; prints the offered load on it")
	return cmd
}

// traceSummaryJSON is `pickyman trace inspect -o json`: the trace's summary with durations and
// times in seconds.
type traceSummaryJSON struct {
	Format  string `json:"format"`
	Jobs    int    `json:"jobs"`
	Skipped int    `json:"skipped"`
	// GPUDemand counts jobs per GPU demand, keyed by the number of GPUs.
	GPUDemand map[string]int `json:"gpu_demand"`
	// DurationSeconds holds p50, p90, p99, max and mean of the job durations.
	DurationSeconds map[string]float64 `json:"duration_seconds"`
	FirstSubmitS    float64            `json:"first_submit_s"`
	LastSubmitS     float64            `json:"last_submit_s"`
	GPUHours        float64            `json:"gpu_hours"`
	// ClusterGPUs and OfferedLoad are there with --cluster.
	ClusterGPUs int            `json:"cluster_gpus,omitempty"`
	OfferedLoad *float64       `json:"offered_load,omitempty"`
	Queues      map[string]int `json:"queues"`
	Classes     map[string]int `json:"priority_classes"`
	// Synthesized counts, per field, the jobs whose field was synthesized.
	Synthesized map[string]int `json:"synthesized"`
}

func newTraceSummaryJSON(s traces.Summary, clusterGPUs int) traceSummaryJSON {
	j := traceSummaryJSON{Format: string(s.Format), Jobs: s.Jobs, Skipped: s.Skipped, GPUDemand: map[string]int{},
		DurationSeconds: map[string]float64{"p50": s.P50.Seconds(), "p90": s.P90.Seconds(), "p99": s.P99.Seconds(),
			"max": s.Max.Seconds(), "mean": s.Mean.Seconds()},
		FirstSubmitS: s.FirstSubmit.Seconds(), LastSubmitS: s.LastSubmit.Seconds(), GPUHours: s.GPUSeconds / 3600,
		Queues: s.Queues, Classes: s.Classes, Synthesized: map[string]int{}}
	for g, n := range s.GPUMix {
		j.GPUDemand[strconv.Itoa(int(g))] = n
	}
	for f, n := range s.Synthesized {
		j.Synthesized[traces.FieldSet(f).String()] = n
	}
	if clusterGPUs > 0 {
		// An arrival span of zero offers no time: the load is infinite, which JSON cannot
		// hold; it is left out then.
		if load := s.OfferedLoad(clusterGPUs); !math.IsInf(load, 0) && !math.IsNaN(load) {
			j.OfferedLoad = &load
		}
		j.ClusterGPUs = clusterGPUs
	}
	return j
}
