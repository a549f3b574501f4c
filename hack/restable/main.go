// Command restable turns the results.json files that `pickyman simulate` writes into the
// Markdown tables of docs/policy.md: one table per run, one row per policy. With -openb
// PODS.csv it also splits each run's mean waiting time by priority class, taking each job's
// class from the qos column of the Alibaba openb pod list (LS and Guaranteed high).
//
//	go run ./hack/restable out/policy/generated ...
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pickyman/pickyman/testbed/report"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "restable:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("restable", flag.ContinueOnError)
	openb := fs.String("openb", "", "openb pod list: split waiting time by qos class")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *openb != "" {
		return classes(*openb, fs.Args())
	}
	for _, dir := range fs.Args() {
		data, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil {
			return err
		}
		var r report.Results
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if i := strings.Index(r.Trace, "/shared/traces/"); i >= 0 {
			r.Trace = "../shared/traces/" + r.Trace[i+len("/shared/traces/"):]
		}
		jobs := 0
		if len(r.Order) > 0 {
			jobs = r.Policies[r.Order[0]].Jobs
		}
		fmt.Printf("**%s**: %s, %d jobs, cluster %s (%d GPUs). Times in seconds.\n\n", filepath.Base(dir), r.Trace, jobs, filepath.Base(r.Cluster), r.GPUs)
		fmt.Println("| policy | wait mean | p50 | p95 | p99 | JCT mean | p50 | p95 | p99 | makespan | preempt. | GPU-h lost | pred. err p50, mean | ovh. err mean |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, name := range r.Order {
			s := r.Policies[name]
			pe, oe := "-", "-"
			if s.PredictionError != nil {
				pe = fmt.Sprintf("%+.3f, %+.3f", s.PredictionError.P50, s.PredictionError.Mean)
			}
			if s.OverheadError != nil {
				oe = fmt.Sprintf("%+.4f", s.OverheadError.Mean)
			}
			fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %.1f | %s | %s |\n",
				name, s.MeanWait, s.P50Wait, s.P95Wait, s.P99Wait, s.MeanJCT, s.P50JCT, s.P95JCT, s.P99JCT,
				s.Makespan, s.Preemptions, s.GPUHoursLost, pe, oe)
		}
		fmt.Println()
	}
	return nil
}

// classes prints the mean waiting time per priority class of each policy in each run.
func classes(pods string, dirs []string) error {
	high := map[string]bool{}
	recs, err := readCSV(pods)
	if err != nil {
		return err
	}
	for _, r := range recs {
		high[r["name"]] = r["qos"] == "LS" || r["qos"] == "Guaranteed"
	}
	for _, dir := range dirs {
		jobs, err := readCSV(filepath.Join(dir, "jobs.csv"))
		if err != nil {
			return err
		}
		type acc struct {
			n   [2]int
			sum [2]float64
		}
		var order []string
		by := map[string]*acc{}
		for _, j := range jobs {
			// jobs.csv writes a rejected job's reason in this column (empty otherwise), and
			// no waiting time.
			if j["rejected"] != "" {
				continue
			}
			a := by[j["policy"]]
			if a == nil {
				a = &acc{}
				by[j["policy"]] = a
				order = append(order, j["policy"])
			}
			c := 0
			if high[j["job"]] {
				c = 1
			}
			w, err := strconv.ParseFloat(j["wait_s"], 64)
			if err != nil {
				return fmt.Errorf("%s: job %s: wait_s: %w", dir, j["job"], err)
			}
			a.n[c]++
			a.sum[c] += w
		}
		fmt.Printf("**%s** by class (LS, Guaranteed high; Burstable, BE low): mean waiting time, seconds.\n\n", filepath.Base(dir))
		fmt.Println("| policy | high: jobs | high: mean wait | low: jobs | low: mean wait |")
		fmt.Println("|---|---:|---:|---:|---:|")
		for _, p := range order {
			a := by[p]
			mean := func(c int) float64 {
				if a.n[c] == 0 {
					return 0
				}
				return a.sum[c] / float64(a.n[c])
			}
			fmt.Printf("| %s | %d | %.0f | %d | %.0f |\n", p, a.n[1], mean(1), a.n[0], mean(0))
		}
		fmt.Println()
	}
	return nil
}

// readCSV reads a CSV file with a header into one map per row.
func readCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	out := make([]map[string]string, 0, len(rows)-1)
	for _, r := range rows[1:] {
		m := make(map[string]string, len(r))
		for i, h := range rows[0] {
			if i < len(r) {
				m[h] = r[i]
			}
		}
		out = append(out, m)
	}
	return out, nil
}
