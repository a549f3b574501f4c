package report

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// row is one line of the side-by-side table.
type row struct {
	label string
	value func(p *Policy) string
}

// optional rows are left out when every policy shows "0" (resizes without elastic jobs).
var optional = map[string]bool{"resizes": true}

func secs(v float64) string { return fmt.Sprintf("%.0f", v) }

var rows = []row{
	{"jobs", func(p *Policy) string { return fmt.Sprint(p.Jobs) }},
	{"rejected", func(p *Policy) string { return fmt.Sprint(p.Rejected) }},
	{"mean wait (s)", func(p *Policy) string { return secs(p.MeanWait) }},
	{"p50 wait (s)", func(p *Policy) string { return secs(p.P50Wait) }},
	{"p95 wait (s)", func(p *Policy) string { return secs(p.P95Wait) }},
	{"p99 wait (s)", func(p *Policy) string { return secs(p.P99Wait) }},
	{"mean JCT (s)", func(p *Policy) string { return secs(p.MeanJCT) }},
	{"p50 JCT (s)", func(p *Policy) string { return secs(p.P50JCT) }},
	{"p95 JCT (s)", func(p *Policy) string { return secs(p.P95JCT) }},
	{"p99 JCT (s)", func(p *Policy) string { return secs(p.P99JCT) }},
	{"mean queueing (s)", func(p *Policy) string { return secs(p.MeanQueueing) }},
	{"makespan (s)", func(p *Policy) string { return secs(p.Makespan) }},
	{"preemptions", func(p *Policy) string { return fmt.Sprint(p.Preemptions) }},
	{"resizes", func(p *Policy) string { return fmt.Sprint(p.Resizes) }},
	{"GPU-hours lost", func(p *Policy) string { return fmt.Sprintf("%.2f", p.GPUHoursLost) }},
	{"utilization", func(p *Policy) string { return fmt.Sprintf("%.3f", p.Utilization) }},
	{"useful utilization", func(p *Policy) string { return fmt.Sprintf("%.3f", p.UsefulUtilization) }},
	{"prediction error p50", func(p *Policy) string {
		if p.PredictionError == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", p.PredictionError.P50)
	}},
	{"events", func(p *Policy) string { return fmt.Sprint(p.Events) }},
}

// cells returns the table: a header row of policy names, then one row per figure.
func (r *Results) cells() [][]string {
	names := r.names()
	out := [][]string{append([]string{""}, names...)}
	for _, rw := range rows {
		line := []string{rw.label}
		zero := true
		for _, n := range names {
			p := r.Policies[n]
			v := rw.value(&p)
			line = append(line, v)
			zero = zero && v == "0"
		}
		if optional[rw.label] && zero {
			continue
		}
		out = append(out, line)
	}
	return out
}

// Table renders the policies side by side as aligned plain text.
func (r *Results) Table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, line := range r.cells() {
		fmt.Fprintln(w, strings.Join(line, "\t")+"\t")
	}
	w.Flush()
	return b.String()
}
