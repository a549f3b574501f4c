package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// Figure is one embedded plot.
type Figure struct {
	Title string
	// URI is a data: URI of the PNG.
	URI string
}

const cdfPoints = 400

// cdf returns at most cdfPoints points of the empirical CDF of xs, with values below
// floor raised to floor (log axes).
func cdf(xs []float64, floor float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	step := max(1, n/cdfPoints)
	var pts plotter.XYs
	for i := 0; i < n; i += step {
		pts = append(pts, plotter.XY{X: math.Max(s[i], floor), Y: float64(i+1) / float64(n)})
	}
	if n > 0 && (n-1)%step != 0 {
		pts = append(pts, plotter.XY{X: math.Max(s[n-1], floor), Y: 1})
	}
	return pts
}

func render(p *plot.Plot) (uri string, err error) {
	defer func() {
		// gonum/plot panics on some degenerate inputs; report them as errors.
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	w, err := p.WriterTo(7*vg.Inch, 3.6*vg.Inch, "png")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes()), nil
}

// lines adds one line per run to p.
func lines(p *plot.Plot, runs []*metrics.Run, xy func(r *metrics.Run) plotter.XYs) error {
	for i, r := range runs {
		pts := xy(r)
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(r.Policy, l)
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return nil
}

func cdfPlot(title, xlabel string, runs []*metrics.Run, value func(j *metrics.JobRecord) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel + " (s, log scale; values under 1 s at 1 s)"
	p.Y.Label.Text = "fraction of jobs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Left = true
	err := lines(p, runs, func(r *metrics.Run) plotter.XYs {
		var xs []float64
		for i := range r.Jobs {
			if !r.Jobs[i].Rejected {
				xs = append(xs, value(&r.Jobs[i]))
			}
		}
		return cdf(xs, 1)
	})
	// A log axis needs a positive range even when every value sits at the floor.
	p.X.Min = math.Max(p.X.Min, 1)
	if p.X.Max <= p.X.Min*10 {
		p.X.Max = p.X.Min * 10
	}
	p.Legend.Left, p.Legend.Top = false, false
	return p, err
}

func seriesPlot(title, ylabel string, runs []*metrics.Run, value func(pt metrics.Point) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the first arrival (h)"
	p.Y.Label.Text = ylabel
	err := lines(p, runs, func(r *metrics.Run) plotter.XYs {
		var pts plotter.XYs
		for _, pt := range r.Series {
			pts = append(pts, plotter.XY{X: pt.T.Hours(), Y: value(pt)})
		}
		return pts
	})
	return p, err
}

func barPlot(title, ylabel string, res *Results, value func(p *Policy) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	names := res.names()
	var vs plotter.Values
	for _, n := range names {
		pol := res.Policies[n]
		vs = append(vs, value(&pol))
	}
	b, err := plotter.NewBarChart(vs, vg.Points(28))
	if err != nil {
		return nil, err
	}
	b.Color = color.RGBA{R: 70, G: 110, B: 170, A: 255}
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(names...)
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Add(plotter.NewGrid())
	return p, nil
}

// Figures renders the report's plots: CDFs of JCT and waiting time, utilization and queue
// length over time, preemptions and GPU-hours lost per policy.
func Figures(res *Results, runs []*metrics.Run) ([]Figure, error) {
	type mk struct {
		title string
		make  func() (*plot.Plot, error)
	}
	all := []mk{
		{"CDF of job completion time", func() (*plot.Plot, error) {
			return cdfPlot("CDF of job completion time", "JCT", runs, func(j *metrics.JobRecord) float64 { return j.JCT().Seconds() })
		}},
		{"CDF of waiting time", func() (*plot.Plot, error) {
			return cdfPlot("CDF of waiting time", "waiting time", runs, func(j *metrics.JobRecord) float64 { return j.Wait().Seconds() })
		}},
		{"GPU utilization over time", func() (*plot.Plot, error) {
			return seriesPlot("GPU utilization over time (allocated GPUs / cluster GPUs)", "utilization", runs, func(pt metrics.Point) float64 { return pt.Utilization })
		}},
		{"Queue length over time", func() (*plot.Plot, error) {
			return seriesPlot("Queue length over time", "queued jobs", runs, func(pt metrics.Point) float64 { return pt.Queued })
		}},
		{"Preemptions per policy", func() (*plot.Plot, error) {
			return barPlot("Preemptions per policy", "preemptions", res, func(p *Policy) float64 { return float64(p.Preemptions) })
		}},
		{"GPU-hours lost per policy", func() (*plot.Plot, error) {
			return barPlot("GPU-hours lost to preemption per policy", "GPU-hours", res, func(p *Policy) float64 { return p.GPUHoursLost })
		}},
	}
	var figs []Figure
	for _, m := range all {
		p, err := m.make()
		if err != nil {
			return nil, fmt.Errorf("report: plot %q: %w", m.title, err)
		}
		uri, err := render(p)
		if err != nil {
			return nil, fmt.Errorf("report: render %q: %w", m.title, err)
		}
		figs = append(figs, Figure{Title: m.title, URI: uri})
	}
	return figs, nil
}
