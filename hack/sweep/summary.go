package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// seedFigures are one variant's figures on one seed.
type seedFigures struct {
	wait, p99, makespan, lost float64
}

func figuresOf(s metrics.Summary) seedFigures {
	return seedFigures{s.Wait.Mean, s.Wait.P99, s.Makespan, s.GPUHoursLost}
}

// goalMet reports whether f meets the goal of docs/policy.md on one seed, against the
// baselines' figures on that seed: a mean wait at or below srtf's while losing at most half
// of srtf's GPU-hours, a p99 wait at or below tiresias', a makespan within 2% of fifo's.
func goalMet(f, srtf, tiresias, fifo seedFigures) bool {
	return f.wait <= srtf.wait && f.lost <= srtf.lost/2 && f.p99 <= tiresias.p99 && f.makespan <= 1.02*fifo.makespan
}

// summary prints, per variant, each figure's mean over the seeds and its range (the spread
// between seeds), and, when srtf, tiresias and fifo are among the variants, on how many
// seeds the variant meets the goal.
func summary(out io.Writer, names []string, seeds []int64, bySeed [][]seedFigures) {
	si, ti, fi := slices.Index(names, "srtf"), slices.Index(names, "tiresias"), slices.Index(names, "fifo")
	withGoal := si >= 0 && ti >= 0 && fi >= 0
	fmt.Fprintf(out, "\nOver seeds %s: mean (min to max). Goal: mean wait <= srtf's, GPU-h lost <= half of srtf's, p99 wait <= tiresias', makespan <= 1.02 x fifo's, on the same seed.\n\n", joinSeeds(seeds))
	fmt.Fprint(out, "| variant | wait mean | p99 wait | makespan | GPU-h lost |")
	if withGoal {
		fmt.Fprint(out, " goal met (seeds) |")
	}
	fmt.Fprint(out, "\n|---|---:|---:|---:|---:|")
	if withGoal {
		fmt.Fprint(out, "---:|")
	}
	fmt.Fprintln(out)
	for i, n := range names {
		var w, p, m, l []float64
		met := 0
		for k := range seeds {
			f := bySeed[k][i]
			w, p, m, l = append(w, f.wait), append(p, f.p99), append(m, f.makespan), append(l, f.lost)
			if withGoal && goalMet(f, bySeed[k][si], bySeed[k][ti], bySeed[k][fi]) {
				met++
			}
		}
		fmt.Fprintf(out, "| `%s` | %s | %s | %s | %s |", strings.ReplaceAll(n, "|", `\|`), spread(w, "%.0f"), spread(p, "%.0f"), spread(m, "%.0f"), spread(l, "%.1f"))
		if withGoal {
			fmt.Fprintf(out, " %d of %d |", met, len(seeds))
		}
		fmt.Fprintln(out)
	}
}

// spread writes the mean of xs and, with more than one, their range.
func spread(xs []float64, format string) string {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	s := fmt.Sprintf(format, sum/float64(len(xs)))
	if len(xs) > 1 {
		s += fmt.Sprintf(" ("+format+" to "+format+")", slices.Min(xs), slices.Max(xs))
	}
	return s
}

func joinSeeds(seeds []int64) string {
	var s []string
	for _, x := range seeds {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ", ")
}
