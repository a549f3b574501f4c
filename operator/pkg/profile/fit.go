package profile

import (
	"math"
	"time"
)

// FitConfig says when a fit is trusted.
type FitConfig struct {
	// MinSamples is the least number of jobs a trusted fit rests on (the paper and docs/policy.md: 4).
	MinSamples int
	// MaxRelResidual bounds the relative root-mean-square residual of a trusted fit.
	MaxRelResidual float64
}

// DefaultFitConfig trusts a fit over at least 4 jobs whose relative RMS residual is at most
// 10%.
func DefaultFitConfig() FitConfig { return FitConfig{MinSamples: 4, MaxRelResidual: 0.10} }

// Fit is the least-squares fit t(G) = A + B/G of epoch time (seconds) against the total
// GPU allocation G.
type Fit struct {
	A, B float64
	// N is the number of samples the fit rests on.
	N int
	// DistinctGPUs is the number of distinct allocations among the samples. With a single
	// allocation the fit assumes linear scaling (A = 0).
	DistinctGPUs int
	// RelResidual is the relative root-mean-square residual sqrt(mean(((t̂-t)/t)²)).
	RelResidual float64
	// Trusted reports whether the fit passed FitConfig.
	Trusted bool
}

// At predicts the epoch time at an allocation of g GPUs; 0 for an empty fit.
func (f Fit) At(g int32) time.Duration {
	if f.N == 0 || g <= 0 {
		return 0
	}
	t := f.A + f.B/float64(g)
	if t <= 0 {
		return time.Millisecond
	}
	return time.Duration(t * float64(time.Second))
}

// FitSamples fits t(G) = a + b/G to the samples by ordinary least squares in x = 1/G.
//
// When all samples share one allocation the slope is not identifiable; the fit then
// assumes ideal data-parallel scaling, a = 0 and b = mean(t·G), which predicts the
// sampled allocation exactly as well as any line would and extrapolates the way a
// data-parallel job scales at best.
func FitSamples(samples []Sample, cfg FitConfig) Fit {
	n := len(samples)
	if n == 0 {
		return Fit{}
	}
	var sx, sy, sxx, sxy float64
	distinct := map[int32]struct{}{}
	for _, s := range samples {
		x := 1 / float64(s.GPUs)
		y := s.EpochTime.Seconds()
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		distinct[s.GPUs] = struct{}{}
	}
	f := Fit{N: n, DistinctGPUs: len(distinct)}
	fn := float64(n)
	if den := fn*sxx - sx*sx; len(distinct) > 1 && den > 1e-12*fn*sxx {
		f.B = (fn*sxy - sx*sy) / den
		f.A = (sy - f.B*sx) / fn
	} else {
		var sum float64
		for _, s := range samples {
			sum += s.EpochTime.Seconds() * float64(s.GPUs)
		}
		f.B = sum / fn
	}
	var ss float64
	for _, s := range samples {
		y := s.EpochTime.Seconds()
		r := (f.A + f.B/float64(s.GPUs) - y) / y
		ss += r * r
	}
	f.RelResidual = math.Sqrt(ss / fn)
	f.Trusted = n >= cfg.MinSamples && f.RelResidual <= cfg.MaxRelResidual
	return f
}
