package cli

import (
	"fmt"
	"os"
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
	)
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print a trace's format, jobs, GPU-demand mix, duration percentiles and synthesized fields",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := traces.Open(args[0], traces.Options{Format: traces.Format(format), Seed: seed})
			if err != nil {
				return err
			}
			defer r.Close()
			s, err := traces.Summarize(r)
			if err != nil {
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
			return s.Write(cmd.OutOrStdout(), gpus)
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "", "force a format ("+traces.FormatNames()+"); empty detects it")
	f.Int64Var(&seed, "seed", 1, "seed for the synthesized fields")
	f.StringVar(&cluster, "cluster", "", "cluster spec or file; prints the offered load on it")
	return cmd
}
