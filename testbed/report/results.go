package report

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/pickyman/pickyman/testbed/metrics"
	"github.com/pickyman/pickyman/traces"
)

// Meta describes what was simulated.
type Meta struct {
	Trace   string `json:"trace"`
	Format  string `json:"format,omitempty"`
	Cluster string `json:"cluster"`
	GPUs    int32  `json:"gpus"`
	Seed    int64  `json:"seed"`
	Ideal   bool   `json:"ideal"`
	// Elastic is the share of the jobs of 2 GPUs or more that were elastic.
	Elastic float64 `json:"elastic,omitempty"`
	// ElasticGrow is how many times its request an elastic job could grow to.
	ElasticGrow int32 `json:"elastic_grow,omitempty"`
	// SynthesizedFields lists the job fields the trace lacked and that were synthesized
	// from the seed, for at least one job.
	SynthesizedFields []string `json:"synthesized_fields"`
}

// Error summarizes relative prediction errors.
type Error struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
}

// Policy is one policy's figures. Times are in seconds.
type Policy struct {
	Jobs              int     `json:"jobs"`
	Rejected          int     `json:"rejected"`
	MeanWait          float64 `json:"mean_wait_s"`
	P50Wait           float64 `json:"p50_wait_s"`
	P95Wait           float64 `json:"p95_wait_s"`
	P99Wait           float64 `json:"p99_wait_s"`
	MeanJCT           float64 `json:"mean_jct_s"`
	P50JCT            float64 `json:"p50_jct_s"`
	P95JCT            float64 `json:"p95_jct_s"`
	P99JCT            float64 `json:"p99_jct_s"`
	MeanQueueing      float64 `json:"mean_queueing_s"`
	P99Queueing       float64 `json:"p99_queueing_s"`
	Makespan          float64 `json:"makespan_s"`
	Preemptions       int64   `json:"preemptions"`
	Resizes           int64   `json:"resizes,omitempty"`
	GPUHoursLost      float64 `json:"gpu_hours_lost"`
	Utilization       float64 `json:"utilization"`
	UsefulUtilization float64 `json:"useful_utilization"`
	Events            int64   `json:"events"`
	Cycles            int64   `json:"cycles"`
	WallSeconds       float64 `json:"wall_s"`
	PredictionError   *Error  `json:"prediction_error,omitempty"`
	OverheadError     *Error  `json:"overhead_error,omitempty"`
}

// Results is the content of results.json.
type Results struct {
	Meta
	// Order lists the policies in the order they were asked for.
	Order    []string          `json:"order"`
	Policies map[string]Policy `json:"policies"`
}

// Synthesized returns the names of the fields synthesized for at least one job.
func Synthesized(jobs []traces.Job) []string {
	var all traces.FieldSet
	for i := range jobs {
		all |= jobs[i].Synthesized
	}
	if all == 0 {
		return []string{}
	}
	return strings.Split(all.String(), "|")
}

func errorOf(d *metrics.Dist) *Error {
	if d == nil {
		return nil
	}
	return &Error{N: d.N, Mean: d.Mean, P50: d.P50, P90: d.P90}
}

// Build computes the results of runs.
func Build(meta Meta, runs []*metrics.Run) *Results {
	r := &Results{Meta: meta, Policies: map[string]Policy{}}
	if r.SynthesizedFields == nil {
		r.SynthesizedFields = []string{}
	}
	for _, run := range runs {
		s := metrics.Summarize(run)
		r.Order = append(r.Order, run.Policy)
		r.Policies[run.Policy] = Policy{
			Jobs: s.Jobs, Rejected: s.Rejected,
			MeanWait: s.Wait.Mean, P50Wait: s.Wait.P50, P95Wait: s.Wait.P95, P99Wait: s.Wait.P99,
			MeanJCT: s.JCT.Mean, P50JCT: s.JCT.P50, P95JCT: s.JCT.P95, P99JCT: s.JCT.P99,
			MeanQueueing: s.Queueing.Mean, P99Queueing: s.Queueing.P99,
			Makespan: s.Makespan, Preemptions: s.Preemptions, Resizes: s.Resizes, GPUHoursLost: s.GPUHoursLost,
			Utilization: s.Utilization, UsefulUtilization: s.UsefulUtilization,
			Events: run.Events, Cycles: run.Cycles, WallSeconds: run.Wall.Seconds(),
			PredictionError: errorOf(s.Prediction), OverheadError: errorOf(s.Overhead),
		}
	}
	return r
}

// JSON encodes the results, indented, with a trailing newline.
func (r *Results) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// names returns the policies in order (falling back to sorted names).
func (r *Results) names() []string {
	if len(r.Order) == len(r.Policies) {
		return r.Order
	}
	var n []string
	for k := range r.Policies {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}
