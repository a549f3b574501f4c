// Command restable turns the results.json files that `pickyman simulate` writes into the
// Markdown tables of docs/policy.md: one table per run, one row per policy.
//
//	go run ./operator/pkg/policies/pickyman/internal/restable out/policy/generated ...
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
}

type summary struct {
	Jobs        int     `json:"jobs"`
	Rejected    int     `json:"rejected"`
	MeanWait    float64 `json:"mean_wait_s"`
	P50Wait     float64 `json:"p50_wait_s"`
	P95Wait     float64 `json:"p95_wait_s"`
	P99Wait     float64 `json:"p99_wait_s"`
	MeanJCT     float64 `json:"mean_jct_s"`
	P50JCT      float64 `json:"p50_jct_s"`
	P95JCT      float64 `json:"p95_jct_s"`
	P99JCT      float64 `json:"p99_jct_s"`
	Makespan    float64 `json:"makespan_s"`
	Preemptions int64   `json:"preemptions"`
	GPUHLost    float64 `json:"gpu_hours_lost"`
	Prediction  *dist   `json:"prediction_error"`
	Overhead    *dist   `json:"overhead_error"`
}

type results struct {
	Trace    string             `json:"trace"`
	Cluster  string             `json:"cluster"`
	GPUs     int                `json:"gpus"`
	Order    []string           `json:"order"`
	Policies map[string]summary `json:"policies"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "restable:", err)
		os.Exit(1)
	}
}

func run(dirs []string) error {
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil {
			return err
		}
		var r results
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
		fmt.Println("| policy | wait mean | p50 | p95 | p99 | JCT mean | p50 | p95 | p99 | makespan | preempt. | GPU-h lost | pred. err p50 | ovh. err mean |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, name := range r.Order {
			s := r.Policies[name]
			pe, oe := "-", "-"
			if s.Prediction != nil {
				pe = fmt.Sprintf("%+.3f", s.Prediction.P50)
			}
			if s.Overhead != nil {
				oe = fmt.Sprintf("%+.4f", s.Overhead.Mean)
			}
			fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %.1f | %s | %s |\n",
				name, s.MeanWait, s.P50Wait, s.P95Wait, s.P99Wait, s.MeanJCT, s.P50JCT, s.P95JCT, s.P99JCT,
				s.Makespan, s.Preemptions, s.GPUHLost, pe, oe)
		}
		fmt.Println()
	}
	return nil
}
