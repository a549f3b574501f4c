package traces

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary describes a trace: what `pickyman trace inspect` prints.
type Summary struct {
	Format  Format
	Jobs    int
	Skipped int
	// GPUMix counts jobs per GPU demand.
	GPUMix map[int32]int
	// Durations holds p50, p90, p99 and the maximum of the job durations; Mean their mean.
	P50, P90, P99, Max, Mean time.Duration
	// FirstSubmit and LastSubmit bound the arrivals.
	FirstSubmit, LastSubmit time.Duration
	// GPUSeconds is the total demand: sum of GPUs x Duration.
	GPUSeconds float64
	// Synthesized counts, per field, the jobs whose field was synthesized.
	Synthesized map[Field]int
	Queues      map[string]int
	Classes     map[string]int
}

// Summarize reads r to the end. It keeps one duration per job for the percentiles.
func Summarize(r Reader) (Summary, error) {
	s := Summary{Format: r.Format(), GPUMix: map[int32]int{}, Synthesized: map[Field]int{},
		Queues: map[string]int{}, Classes: map[string]int{}}
	var durs []time.Duration
	var total float64
	for {
		j, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Summary{}, err
		}
		if s.Jobs == 0 || j.Submit < s.FirstSubmit {
			s.FirstSubmit = j.Submit
		}
		if s.Jobs == 0 || j.Submit > s.LastSubmit {
			s.LastSubmit = j.Submit
		}
		s.Jobs++
		s.GPUMix[j.GPUs]++
		s.GPUSeconds += float64(j.GPUs) * j.Duration.Seconds()
		s.Queues[j.Queue]++
		s.Classes[j.PriorityClass]++
		for _, fn := range fieldNames {
			if j.Synthesized.Has(fn.f) {
				s.Synthesized[fn.f]++
			}
		}
		durs = append(durs, j.Duration)
		total += float64(j.Duration)
	}
	if sc, ok := r.(SkipCounter); ok {
		s.Skipped = sc.Skipped()
	}
	if len(durs) > 0 {
		slices.Sort(durs)
		pct := func(p float64) time.Duration {
			return durs[min(len(durs)-1, int(math.Ceil(p*float64(len(durs))))-1)]
		}
		s.P50, s.P90, s.P99, s.Max = pct(0.5), pct(0.9), pct(0.99), durs[len(durs)-1]
		s.Mean = time.Duration(total / float64(len(durs)))
	}
	return s, nil
}

// OfferedLoad is the summary's GPU-seconds over what clusterGPUs offer from the first to the
// last arrival.
func (s Summary) OfferedLoad(clusterGPUs int) float64 {
	span := (s.LastSubmit - s.FirstSubmit).Seconds()
	if clusterGPUs <= 0 || span <= 0 {
		return math.Inf(1)
	}
	return s.GPUSeconds / (float64(clusterGPUs) * span)
}

// Write prints the summary as aligned text; clusterGPUs > 0 adds the offered load.
func (s Summary) Write(w io.Writer, clusterGPUs int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "format\t%s\n", s.Format)
	fmt.Fprintf(tw, "jobs\t%d (skipped %d)\n", s.Jobs, s.Skipped)
	gpus := make([]int32, 0, len(s.GPUMix))
	for g := range s.GPUMix {
		gpus = append(gpus, g)
	}
	slices.Sort(gpus)
	var mix []string
	for _, g := range gpus {
		mix = append(mix, fmt.Sprintf("%d:%d (%.1f%%)", g, s.GPUMix[g], 100*float64(s.GPUMix[g])/float64(max(s.Jobs, 1))))
	}
	fmt.Fprintf(tw, "GPU demand\t%s\n", strings.Join(mix, "  "))
	fmt.Fprintf(tw, "duration\tp50 %s  p90 %s  p99 %s  max %s  mean %s\n",
		fmtDur(s.P50), fmtDur(s.P90), fmtDur(s.P99), fmtDur(s.Max), fmtDur(s.Mean))
	fmt.Fprintf(tw, "arrivals\t%s .. %s (span %s)\n", fmtDur(s.FirstSubmit), fmtDur(s.LastSubmit), fmtDur(s.LastSubmit-s.FirstSubmit))
	fmt.Fprintf(tw, "GPU-hours\t%.1f\n", s.GPUSeconds/3600)
	if clusterGPUs > 0 {
		fmt.Fprintf(tw, "offered load\t%.3f of %d GPUs over the arrival span\n", s.OfferedLoad(clusterGPUs), clusterGPUs)
	}
	fmt.Fprintf(tw, "queues\t%s\n", countList(s.Queues))
	fmt.Fprintf(tw, "priority classes\t%s\n", countList(s.Classes))
	var syn []string
	for _, fn := range fieldNames {
		if n := s.Synthesized[fn.f]; n > 0 {
			syn = append(syn, fmt.Sprintf("%s:%d", fn.name, n))
		}
	}
	if len(syn) == 0 {
		syn = []string{"none"}
	}
	fmt.Fprintf(tw, "synthesized\t%s\n", strings.Join(syn, "  "))
	return tw.Flush()
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 8 {
		return fmt.Sprintf("%d distinct", len(keys))
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = `""`
		}
		parts[i] = fmt.Sprintf("%s:%d", name, m[k])
	}
	return strings.Join(parts, "  ")
}

// fmtDur prints a duration rounded to the second (to the millisecond under a minute).
func fmtDur(d time.Duration) string {
	if d < time.Minute && d > -time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
