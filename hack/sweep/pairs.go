package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// bucket is a group of jobs in the per-job comparison of two runs.
type bucket struct {
	label string
	in    func(metrics.JobRecord) bool
}

// serviceBuckets and gpuBuckets split the jobs by true run time and by GPUs.
var (
	serviceBuckets = []bucket{
		{"run < 10 min", func(j metrics.JobRecord) bool { return j.Service < 10*time.Minute }},
		{"run 10 min-1 h", func(j metrics.JobRecord) bool { return j.Service >= 10*time.Minute && j.Service < time.Hour }},
		{"run 1-6 h", func(j metrics.JobRecord) bool { return j.Service >= time.Hour && j.Service < 6*time.Hour }},
		{"run >= 6 h", func(j metrics.JobRecord) bool { return j.Service >= 6*time.Hour }},
	}
	gpuBuckets = []bucket{
		{"1 GPU", func(j metrics.JobRecord) bool { return j.GPUs <= 1 }},
		{"2-4 GPUs", func(j metrics.JobRecord) bool { return j.GPUs > 1 && j.GPUs <= 4 }},
		{"8+ GPUs", func(j metrics.JobRecord) bool { return j.GPUs > 4 }},
	}
)

// pairs prints where the mean waiting time of run a differs from run b's, job by job: per
// group of jobs (by true run time, by GPUs), how many jobs, their mean wait in each run, and
// the group's share of the difference of the means (its summed difference over all jobs).
// The shares of a split add up to the difference of the means.
func pairs(out io.Writer, na, nb string, a, b *metrics.Run) {
	bw := map[string]metrics.JobRecord{}
	for _, j := range b.Jobs {
		if !j.Rejected {
			bw[j.ID] = j
		}
	}
	var n int
	for _, j := range a.Jobs {
		if _, ok := bw[j.ID]; ok && !j.Rejected {
			n++
		}
	}
	fmt.Fprintf(out, "\nPer job, `%s` against `%s` (%d jobs in both): mean wait per group; share = the group's part of the difference of the means.\n\n", na, nb, n)
	fmt.Fprintf(out, "| group | jobs | %s: mean wait | %s: mean wait | share of difference | %s: preemptions suffered | %s: preemptions suffered |\n", na, nb, na, nb)
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|")
	for _, split := range [][]bucket{serviceBuckets, gpuBuckets} {
		for _, bk := range split {
			var k int
			var wa, wb float64
			var pa, pb int64
			for _, j := range a.Jobs {
				o, ok := bw[j.ID]
				if !ok || j.Rejected || !bk.in(o) {
					continue
				}
				k++
				wa += j.Wait().Seconds()
				wb += o.Wait().Seconds()
				pa += int64(j.Preemptions)
				pb += int64(o.Preemptions)
			}
			if k == 0 {
				continue
			}
			fmt.Fprintf(out, "| %s | %d | %.0f | %.0f | %+.0f | %d | %d |\n", bk.label, k, wa/float64(k), wb/float64(k), (wa-wb)/float64(max(n, 1)), pa, pb)
		}
	}
}

// worstJobs prints the n jobs whose wait in run a exceeds their wait in run b the most.
func worstJobs(out io.Writer, na, nb string, a, b *metrics.Run, n int) {
	bw := map[string]metrics.JobRecord{}
	for _, j := range b.Jobs {
		if !j.Rejected {
			bw[j.ID] = j
		}
	}
	type diff struct {
		a, b metrics.JobRecord
		d    float64
	}
	var ds []diff
	for _, j := range a.Jobs {
		if o, ok := bw[j.ID]; ok && !j.Rejected {
			ds = append(ds, diff{j, o, j.Wait().Seconds() - o.Wait().Seconds()})
		}
	}
	slices.SortFunc(ds, func(x, y diff) int { return cmp.Compare(y.d, x.d) })
	fmt.Fprintf(out, "\nThe %d jobs that wait longest under `%s` than under `%s` (times in seconds).\n\n", n, na, nb)
	fmt.Fprintf(out, "| job | GPUs | submit | run time | %s: wait | %s: preemptions | %s: wait | %s: preemptions |\n", na, na, nb, nb)
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, d := range ds[:min(n, len(ds))] {
		fmt.Fprintf(out, "| %s | %d | %.0f | %.0f | %.0f | %d | %.0f | %d |\n", d.a.ID, d.a.GPUs, d.a.Submit.Seconds(), d.a.Service.Seconds(), d.a.Wait().Seconds(), d.a.Preemptions, d.b.Wait().Seconds(), d.b.Preemptions)
	}
}
