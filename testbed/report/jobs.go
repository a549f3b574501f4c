package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/pickyman/pickyman/testbed/metrics"
)

var jobColumns = []string{"policy", "job", "gpus", "submit_s", "first_start_s", "finish_s", "service_s",
	"queueing_s", "wait_s", "jct_s", "held_s", "preemptions", "redone_s", "suspend_wait_s",
	"resume_overhead_s", "start_overhead_s", "gpu_s_lost", "rejected"}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// WriteJobs writes jobs.csv: one row per job per run, times in seconds.
func WriteJobs(w io.Writer, runs []*metrics.Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(jobColumns); err != nil {
		return err
	}
	for _, run := range runs {
		for i := range run.Jobs {
			j := &run.Jobs[i]
			if j.Rejected {
				if err := cw.Write([]string{run.Policy, j.ID, fmt.Sprint(j.GPUs), f3(j.Submit.Seconds()), "", "", f3(j.Service.Seconds()),
					"", "", "", "", "", "", "", "", "", "", j.RejectReason}); err != nil {
					return err
				}
				continue
			}
			rec := []string{run.Policy, j.ID, fmt.Sprint(j.GPUs), f3(j.Submit.Seconds()), f3(j.FirstStart.Seconds()),
				f3(j.Finish.Seconds()), f3(j.Service.Seconds()), f3(j.Queueing().Seconds()), f3(j.Wait().Seconds()),
				f3(j.JCT().Seconds()), f3(j.Held.Seconds()), fmt.Sprint(j.Preemptions), f3(j.RedoneWork.Seconds()),
				f3(j.SuspendWait.Seconds()), f3(j.ResumeOverhead.Seconds()), f3(j.StartOverhead.Seconds()),
				f3(j.GPUSecondsLost()), ""}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
