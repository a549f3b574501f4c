package traces

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// GenerateConfig parameterizes the synthetic trace generator. Zero fields other than Span
// take the values of DefaultGenerateConfig.
type GenerateConfig struct {
	Jobs int
	Seed int64
	// Span is the arrival window. Zero derives it from the trace so that the offered load
	// (GPU-seconds asked for over ClusterGPUs x Span) equals Load.
	Span time.Duration
	// Load is the offered load that a zero Span aims at.
	Load float64
	// ClusterGPUs is the cluster size the load is measured against.
	ClusterGPUs int
}

// DefaultGenerateConfig is the main job's default trace: 2,000 jobs whose arrival window is
// derived so they offer a 32-node x 8-GPU cluster exactly its capacity (load 1.0) over the
// window. Queues then form at the daily peaks and preemption matters.
func DefaultGenerateConfig() GenerateConfig {
	return GenerateConfig{Jobs: 2000, Seed: 1, Load: 1.0, ClusterGPUs: 32 * 8}
}

// demandMix is the GPU-demand distribution of the generator: the job counts per GPU demand
// measured in philly.csv (82,247 jobs derived from the Microsoft Philly trace, Jeon et al.,
// ATC'19; 93.2% single-GPU).
var demandMix = []struct {
	gpus  int32
	count int
}{
	{1, 76627}, {2, 1818}, {4, 1870}, {8, 1643}, {12, 7}, {16, 199}, {24, 7}, {32, 67}, {64, 6}, {128, 3},
}

// durationModel is a log-normal fitted to the median and 90th percentile of philly.csv's
// durations: mu = ln(p50), sigma = ln(p90/p50)/z(0.9).
type durationModel struct{ p50, p90 time.Duration }

var (
	singleGPUDurations = durationModel{p50: 1117 * time.Second, p90: 8512 * time.Second}
	multiGPUDurations  = durationModel{p50: 4584 * time.Second, p90: 209130 * time.Second}
)

// Duration bounds of generated jobs; the upper one keeps one outlier from setting the
// makespan of a 2,000-job replay (philly.csv's p99 is 2.9 days; its maximum 53 days).
const (
	minGenDuration = 10 * time.Second
	maxGenDuration = 7 * 24 * time.Hour
	z90            = 1.2815515655446004
)

func (m durationModel) draw(rng *rand.Rand) time.Duration {
	mu := math.Log(m.p50.Seconds())
	sigma := math.Log(float64(m.p90)/float64(m.p50)) / z90
	d := time.Duration(math.Exp(mu+sigma*rng.NormFloat64()) * float64(time.Second)).Round(time.Second)
	return min(max(d, minGenDuration), maxGenDuration)
}

// queueMix is the queue distribution: philly.csv's three busiest virtual clusters and the
// rest as a fourth queue, by their job counts.
var queueMix = []struct {
	name  string
	count int
}{
	{"vc1", 41226}, {"vc2", 16091}, {"vc3", 9953}, {"vc4", 14977},
}

// Diurnal arrivals: the arrival rate is lambda(t) ~ 1 + diurnalAmplitude*cos(2*pi*(t -
// peakHour)/24h); philly.csv's hourly submit counts range from 0.64x to 2.1x their mean,
// peaking at 07:00.
const (
	diurnalAmplitude = 0.5
	peakHour         = 7
)

// Generate returns a synthetic trace with Philly-like distributions, in arrival order. Each
// job draws its GPU demand (demandMix), duration (log-normal per demand class), queue
// (queueMix) and priority class (20% high); arrivals are a diurnal Poisson process
// conditioned on the job count: the arrival times are independent draws from the diurnal
// rate over [0, Span), sorted. The fields a trace would lack (model, epochs, sizes, workers)
// are synthesized as for a read trace and flagged. The same config gives the same trace.
func Generate(cfg GenerateConfig) []Job {
	def := DefaultGenerateConfig()
	if cfg.Load <= 0 {
		cfg.Load = def.Load
	}
	if cfg.ClusterGPUs <= 0 {
		cfg.ClusterGPUs = def.ClusterGPUs
	}
	if cfg.Jobs <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed_0f_9e4e))
	jobs := make([]Job, cfg.Jobs)
	var work float64 // GPU-seconds
	for i := range jobs {
		j := &jobs[i]
		j.GPUs = demandMix[pickWeighted(rng, len(demandMix), func(k int) int { return demandMix[k].count })].gpus
		if j.GPUs == 1 {
			j.Duration = singleGPUDurations.draw(rng)
		} else {
			j.Duration = multiGPUDurations.draw(rng)
		}
		j.Queue = queueMix[pickWeighted(rng, len(queueMix), func(k int) int { return queueMix[k].count })].name
		j.Priority, j.PriorityClass = PriorityLow, ClassLow
		if rng.Float64() < highPriorityShare {
			j.Priority, j.PriorityClass = PriorityHigh, ClassHigh
		}
		work += float64(j.GPUs) * j.Duration.Seconds()
	}
	span := cfg.Span
	if span <= 0 {
		span = time.Duration(work / (cfg.Load * float64(cfg.ClusterGPUs)) * float64(time.Second)).Round(time.Second)
		span = max(span, time.Second)
	}
	arrivals := diurnalArrivals(rng, cfg.Jobs, span)
	for i := range jobs {
		j := &jobs[i]
		j.ID = fmt.Sprintf("job-%05d", i)
		j.Submit = arrivals[i]
		j.Line = i + 2 // the line WriteCSV puts it on
		synthesize(j, cfg.Seed)
	}
	return jobs
}

// diurnalArrivals draws n arrival times in [0, span) from the diurnal rate by rejection and
// sorts them.
func diurnalArrivals(rng *rand.Rand, n int, span time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		for {
			t := time.Duration(rng.Int64N(int64(span)))
			phase := 2 * math.Pi * (t.Hours() - peakHour) / 24
			if rng.Float64()*(1+diurnalAmplitude) < 1+diurnalAmplitude*math.Cos(phase) {
				out[i] = t.Round(time.Second)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func pickWeighted(rng *rand.Rand, n int, weight func(int) int) int {
	total := 0
	for k := range n {
		total += weight(k)
	}
	x := rng.IntN(total)
	for k := range n {
		if x -= weight(k); x < 0 {
			return k
		}
	}
	return n - 1
}

// OfferedLoad is the GPU-seconds the jobs ask for over the GPU-seconds a cluster of
// clusterGPUs offers in span (span 0: from the first to the last arrival).
func OfferedLoad(jobs []Job, clusterGPUs int, span time.Duration) float64 {
	if len(jobs) == 0 || clusterGPUs <= 0 {
		return 0
	}
	if span <= 0 {
		lo, hi := jobs[0].Submit, jobs[0].Submit
		for _, j := range jobs {
			lo, hi = min(lo, j.Submit), max(hi, j.Submit)
		}
		span = hi - lo
	}
	if span <= 0 {
		return math.Inf(1)
	}
	var work float64
	for _, j := range jobs {
		work += float64(j.GPUs) * j.Duration.Seconds()
	}
	return work / (float64(clusterGPUs) * span.Seconds())
}
