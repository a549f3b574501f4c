package util

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Stage is one step that every job of a run goes through (submitted, queued, admitted, its pod
// created, ...), with the time each job reached it. Times has one entry per job, the same job
// at the same index in every stage of a report; a zero time is a job that has not reached it.
type Stage struct {
	Name  string
	Times []time.Time
}

// StageRow is a stage's figures in a report; times are seconds after the run's start.
type StageRow struct {
	Name    string
	Jobs    int
	First   float64
	Last    float64
	Rate    float64 // jobs a second from its first job to its last
	LagP50  float64 // per job, behind the stage before (0 for the first stage)
	LagP90  float64
	LagMax  float64
	HasPrev bool
}

// StageRows computes each stage's row. Times carry the API server's one-second resolution,
// so a rate is over at least one second.
func StageRows(start time.Time, stages []Stage) []StageRow {
	rows := make([]StageRow, len(stages))
	for i, st := range stages {
		r := StageRow{Name: st.Name, HasPrev: i > 0}
		var first, last time.Time
		var lags []float64
		for j, t := range st.Times {
			if t.IsZero() {
				continue
			}
			r.Jobs++
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(last) {
				last = t
			}
			if i > 0 && j < len(stages[i-1].Times) && !stages[i-1].Times[j].IsZero() {
				lags = append(lags, t.Sub(stages[i-1].Times[j]).Seconds())
			}
		}
		if r.Jobs > 0 {
			r.First, r.Last = first.Sub(start).Seconds(), last.Sub(start).Seconds()
			r.Rate = float64(r.Jobs) / max(r.Last-r.First, 1)
		}
		if len(lags) > 0 {
			slices.Sort(lags)
			r.LagP50, r.LagP90, r.LagMax = nearestRank(lags, 0.5), nearestRank(lags, 0.9), lags[len(lags)-1]
		}
		rows[i] = r
	}
	return rows
}

func nearestRank(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// WriteStages writes each stage's jobs, first and last time after start, rate and lag
// behind the stage before, then a timeline: how many jobs had reached each stage every step.
func WriteStages(w io.Writer, start time.Time, step time.Duration, stages []Stage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tjobs\tfirst s\tlast s\trate/s\tlag p50 s\tlag p90 s\tlag max s")
	rows := StageRows(start, stages)
	for _, r := range rows {
		lag := "-\t-\t-"
		if r.HasPrev {
			lag = fmt.Sprintf("%.0f\t%.0f\t%.0f", r.LagP50, r.LagP90, r.LagMax)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.1f\t%s\n", r.Name, r.Jobs, r.First, r.Last, r.Rate, lag)
	}
	_ = tw.Flush()
	end := 0.0
	for _, r := range rows {
		end = max(end, r.Last)
	}
	names := make([]string, len(stages))
	for i, st := range stages {
		names[i] = st.Name
	}
	fmt.Fprintf(tw, "t s\t%s\n", strings.Join(names, "\t"))
	for t := step; ; t += step {
		counts := make([]string, len(stages))
		for i, st := range stages {
			n := 0
			for _, at := range st.Times {
				if !at.IsZero() && at.Sub(start) <= t {
					n++
				}
			}
			counts[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(tw, "%.0f\t%s\n", t.Seconds(), strings.Join(counts, "\t"))
		if t.Seconds() >= end {
			break
		}
	}
	_ = tw.Flush()
}

// Requests are the API server's requests by verb and resource (with its subresource): Count
// from apiserver_request_total, the requests answered other than 2xx apart under their code
// ("POST pods", "PUT allocations/status", "PUT allocations/status 409"); Seconds and Samples
// from apiserver_request_duration_seconds, per verb and resource whatever the code.
type Requests struct {
	Count, Seconds, Samples map[string]float64
}

// ReadRequests reads the API server's request counts and latencies from its metrics.
func ReadRequests(fams map[string]*dto.MetricFamily) Requests {
	r := Requests{Count: map[string]float64{}, Seconds: map[string]float64{}, Samples: map[string]float64{}}
	key := func(m *dto.Metric) string {
		res := label(m, "resource")
		if res == "" {
			return ""
		}
		if sub := label(m, "subresource"); sub != "" {
			res += "/" + sub
		}
		return label(m, "verb") + " " + res
	}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		k := key(m)
		if k == "" {
			continue
		}
		if code := label(m, "code"); code != "" && code[0] != '2' {
			k += " " + code
		}
		r.Count[k] += m.GetCounter().GetValue()
	}
	for _, m := range fams["apiserver_request_duration_seconds"].GetMetric() {
		if k := key(m); k != "" {
			r.Seconds[k] += m.GetHistogram().GetSampleSum()
			r.Samples[k] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return r
}

// WriteRequests writes the n largest counts of after less before, with their share of every
// request between the two, their count per job and the API server's mean time to serve a
// request of their verb and resource (any code) between the two.
func WriteRequests(w io.Writer, before, after Requests, jobs, n int) {
	type row struct {
		key string
		d   float64
	}
	var rows []row
	total := 0.0
	for k, v := range after.Count {
		if d := v - before.Count[k]; d > 0 {
			rows = append(rows, row{k, d})
			total += d
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].d != rows[j].d {
			return rows[i].d > rows[j].d
		}
		return rows[i].key < rows[j].key
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "request\tcount\tshare\tper job\tmean ms\n")
	for i, r := range rows {
		if i == n {
			break
		}
		mean := "-"
		k := r.key
		if f := strings.Fields(k); len(f) == 3 {
			k = f[0] + " " + f[1] // a non-2xx row: the latency of its verb and resource
		}
		if samples := after.Samples[k] - before.Samples[k]; samples > 0 {
			mean = fmt.Sprintf("%.0f", 1000*(after.Seconds[k]-before.Seconds[k])/samples)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f%%\t%.2f\t%s\n", r.key, r.d, 100*r.d/total, r.d/float64(max(jobs, 1)), mean)
	}
	fmt.Fprintf(tw, "all\t%.0f\t100%%\t%.2f\t-\n", total, total/float64(max(jobs, 1)))
	_ = tw.Flush()
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
