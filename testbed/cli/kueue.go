package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/policies/kueue"
	"github.com/pickyman/pickyman/operator/pkg/policies/pickyman"
	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/testbed/replay"
	"github.com/pickyman/pickyman/testbed/report"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// kueueRunName names the cluster's run under real Kueue in the report ("... (cluster)").
const kueueRunName = "Kueue v0.17.0"

// validateScheduler checks --scheduler and what it allows: real Kueue admits the replay's
// plain PyTorchJobs.
func (o replayOptions) validateScheduler() error {
	switch o.scheduler {
	case replay.SchedulerPickyMan:
		return nil
	case replay.SchedulerKueue:
	default:
		return fmt.Errorf("--scheduler %q: want one of %s", o.scheduler, strings.Join(replay.Schedulers(), ", "))
	}
	if o.kind != replay.KindPyTorchJob {
		return fmt.Errorf("--scheduler kueue: the replay's Kueue admits PyTorchJobs only; --kind %s", o.kind)
	}
	if o.elastic > 0 {
		return errors.New("--scheduler kueue: elastic jobs are resized by PickyMan; Kueue replays rigid jobs (--elastic 0)")
	}
	return nil
}

// reportKueue runs the simulator's kueue and pickyman policies on the replay's jobs and
// writes the report with the three runs side by side, and fidelity.md with our kueue policy
// against real Kueue.
func (o replayOptions) reportKueue(ctx context.Context, size traces.Cluster, jobs []traces.Job, meta report.Meta, run *metrics.Run, stdout, stderr io.Writer) error {
	cfg := sim.DefaultConfig()
	cfg.Seed = o.seed
	comparison, err := sim.NewComparison(size, jobs, []string{kueue.Name, pickyman.Name}, policies.ByName, cfg)
	if err != nil {
		return err
	}
	simRuns, err := comparison.Run(ctx)
	if err != nil {
		return err
	}
	for _, r := range simRuns {
		r.Policy += " (simulator)"
	}
	meta.Cluster, meta.Seed, meta.GPUs = size.String(), o.seed, int32(size.GPUs())
	res, err := report.Write(o.out, meta, append(simRuns, run))
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, res.Table())
	fid := KueueFidelity(metrics.Summarize(simRuns[0]), metrics.Summarize(run), metrics.Summarize(simRuns[1]), o.timeScale, run.Wall)
	if err := os.WriteFile(filepath.Join(o.out, "fidelity.md"), []byte(fid), 0o644); err != nil {
		return err
	}
	fmt.Fprint(stdout, fid)
	fmt.Fprintf(stderr, "wrote %s/results.json, jobs.csv, report.html and fidelity.md\n", o.out)
	return nil
}

// KueueFidelity is the table of the simulator's kueue policy against real Kueue on the
// cluster, with the simulator's pickyman policy on the same jobs beside them.
func KueueFidelity(simK, real, simP metrics.Summary, scale float64, wall time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| metric | kueue (simulator) | %s (cluster) | difference | pickyman (simulator) |\n|---|---|---|---|---|\n", kueueRunName)
	row := func(name, format string, s, c, p float64) {
		diff := fmt.Sprintf(format, c-s)
		if s != 0 {
			diff = fmt.Sprintf("%+.1f%%", (c-s)/s*100)
		} else if c > 0 {
			diff = "+" + diff
		}
		fmt.Fprintf(&b, "| %s | "+format+" | "+format+" | %s | "+format+" |\n", name, s, c, diff, p)
	}
	row("mean wait (s)", "%.0f", simK.Wait.Mean, real.Wait.Mean, simP.Wait.Mean)
	row("p99 wait (s)", "%.0f", simK.Wait.P99, real.Wait.P99, simP.Wait.P99)
	row("mean JCT (s)", "%.0f", simK.JCT.Mean, real.JCT.Mean, simP.JCT.Mean)
	row("p99 JCT (s)", "%.0f", simK.JCT.P99, real.JCT.P99, simP.JCT.P99)
	row("makespan (s)", "%.0f", simK.Makespan, real.Makespan, simP.Makespan)
	row("preemptions", "%.0f", float64(simK.Preemptions), float64(real.Preemptions), float64(simP.Preemptions))
	row("GPU-hours lost", "%.1f", simK.GPUHoursLost, real.GPUHoursLost, simP.GPUHoursLost)
	fmt.Fprintf(&b, "\ntime scale %g; cluster replay wall time %v; the cluster's GPU-hours lost are estimated (held beyond service and one start)\n",
		scale, wall.Round(time.Second))
	return b.String()
}
