package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// Figure is one plot of the report: a question and the SVG that answers it.
type Figure struct {
	// ID names the figure in the page (an HTML id).
	ID string
	// Title is the question the plot answers; Caption says how to read it.
	Title, Caption string
	// SVG is the plot's markup, rendered by this package.
	SVG template.HTML
	// Data is the JSON the page's script reads to show values under the pointer; empty
	// for plots without hover.
	Data template.JS
	// Policies lists the policies drawn, in order.
	Policies []string
}

// hoverData is what the page's script reads for a line plot.
type hoverData struct {
	X struct {
		Min    float64 `json:"min"`
		Max    float64 `json:"max"`
		Log    bool    `json:"log"`
		Format string  `json:"format"`
		Label  string  `json:"label"`
	} `json:"x"`
	YFormat string `json:"yformat"`
	// YMin and YMax are the y axis' range; Rescale says the page may fit it to the
	// policies shown (plots over time; a CDF keeps 0 to 1).
	YMin    float64  `json:"ymin"`
	YMax    float64  `json:"ymax"`
	Rescale bool     `json:"rescale"`
	Series  []series `json:"series"`
	// Geometry of the plot area in SVG units: left, top, width, height.
	Area [4]float64 `json:"area"`
}

// cdfSeries returns the empirical CDF of xs as points (value, fraction of jobs at or
// below it), values below floor raised to floor (log axes).
func cdfSeries(xs []float64, floor float64) [][2]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	var pts [][2]float64
	for i, v := range s {
		if i+1 < n && s[i+1] == v {
			continue // one point per distinct value, at its highest rank
		}
		pts = append(pts, [2]float64{math.Max(v, floor), float64(i+1) / float64(n)})
	}
	return thin(pts)
}

// linePlot renders one line per policy and the hover data.
func linePlot(id, title, caption string, names []string, styles map[string]Style, all []series, x, y axis) (Figure, error) {
	var b svgBuilder
	b.frame(title, x, y)
	for _, s := range all {
		if len(s.Points) > 0 {
			b.line(s, styles[s.Policy], x, y)
		}
	}
	b.f(`<g class="hover" visibility="hidden"><line class="cursor" x1="0" y1="%d" x2="0" y2="%d"/></g>`, marginT, marginT+innerH)
	b.WriteString(`</svg>`)
	var h hoverData
	h.X.Min, h.X.Max, h.X.Log, h.X.Format, h.X.Label = x.min, x.max, x.log, x.format, x.label
	h.YFormat, h.Series = y.format, all
	h.YMin, h.YMax, h.Rescale = y.min, y.max, !x.log
	h.Area = [4]float64{marginL, marginT, innerW, innerH}
	js, err := json.Marshal(h)
	if err != nil {
		return Figure{}, err
	}
	// The markup is built from numbers and escaped names; json.Marshal escapes <, > and &.
	return Figure{ID: id, Title: title, Caption: caption, SVG: template.HTML(b.String()), Data: template.JS(js), Policies: names}, nil
}

// bounds returns the smallest and largest X and Y over every series.
func bounds(all []series) (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range all {
		for _, p := range s.Points {
			x0, x1 = math.Min(x0, p[0]), math.Max(x1, p[0])
			y0, y1 = math.Min(y0, p[1]), math.Max(y1, p[1])
		}
	}
	if math.IsInf(x0, 1) {
		return 0, 1, 0, 1
	}
	return x0, x1, y0, y1
}

func cdfFigure(id, title, caption, xlabel string, names []string, styles map[string]Style, runs []*metrics.Run, value func(j *metrics.JobRecord) float64) (Figure, error) {
	var all []series
	for _, r := range runs {
		var xs []float64
		for i := range r.Jobs {
			if !r.Jobs[i].Rejected {
				xs = append(xs, value(&r.Jobs[i]))
			}
		}
		all = append(all, series{Policy: r.Policy, Points: cdfSeries(xs, 1)})
	}
	_, hi, _, _ := bounds(all)
	// A log axis from 1 s to the next round duration above the largest value.
	x := axis{min: 1, max: math.Max(10, hi*1.05), log: true, format: secondsFormat, label: xlabel + " (log scale; under 1 s drawn at 1 s)"}
	y := axis{min: 0, max: 1, format: fracFormat, label: "fraction of jobs"}
	return linePlot(id, title, caption, names, styles, all, x, y)
}

func seriesFigure(id, title, caption, ylabel, yformat string, names []string, styles map[string]Style, runs []*metrics.Run, value func(pt metrics.Point) float64) (Figure, error) {
	var all []series
	for _, r := range runs {
		var pts [][2]float64
		for _, pt := range r.Series {
			pts = append(pts, [2]float64{pt.T.Hours(), value(pt)})
		}
		all = append(all, series{Policy: r.Policy, Points: thin(pts)})
	}
	x0, x1, _, y1 := bounds(all)
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= 0 {
		y1 = 1
	}
	x := axis{min: math.Min(0, x0), max: x1, format: hourFormat, label: "time since the first arrival (h)"}
	y := axis{min: 0, max: niceCeil(y1), format: yformat, label: ylabel}
	return linePlot(id, title, caption, names, styles, all, x, y)
}

// niceCeil rounds v up to a multiple of its tick step.
func niceCeil(v float64) float64 {
	step := niceStep(v / 5)
	return math.Ceil(v/step-1e-9) * step
}

// costFigure draws preemptions and GPU-hours lost per policy as two panels of horizontal
// bars, one bar per policy in its colour.
func costFigure(res *Results, names []string, styles map[string]Style) Figure {
	var b svgBuilder
	const title = "What does preemption cost?"
	rowH := math.Min(26, float64(innerH)/float64(max(1, len(names))))
	h := int(marginT + rowH*float64(len(names)) + 30)
	b.f(`<svg class="plot bars" viewBox="0 0 %d %d" role="img" aria-label="%s">`, plotW, h, esc(title))
	const labelW, panelGap = 120, 30
	panelW := (plotW - labelW - marginR - panelGap) / 2
	panels := []struct {
		name  string
		value func(p *Policy) float64
		text  func(v float64) string
	}{
		{"preemptions", func(p *Policy) float64 { return float64(p.Preemptions) }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		{"GPU-hours lost", func(p *Policy) float64 { return p.GPUHoursLost }, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	}
	for pi, panel := range panels {
		x0 := float64(labelW + pi*(panelW+panelGap))
		top := 0.0
		for _, n := range names {
			p := res.Policies[n]
			top = math.Max(top, panel.value(&p))
		}
		if top <= 0 {
			top = 1
		}
		b.f(`<text class="axis-label" x="%.1f" y="%d">%s</text>`, x0, marginT, esc(panel.name))
		for i, n := range names {
			p := res.Policies[n]
			v := panel.value(&p)
			y := float64(marginT+8) + rowH*float64(i)
			if pi == 0 {
				b.f(`<text class="tick" x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, labelW-8, y+rowH/2, esc(n))
			}
			w := math.Max(1, v/top*float64(panelW-60))
			st := styles[n]
			b.f(`<rect class="bar" data-policy="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s %s</title></rect>`,
				esc(n), x0, y+2, w, rowH-4, st.Color, esc(n), panel.text(v), esc(panel.name))
			b.f(`<text class="value" x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`, x0+w+4, y+rowH/2, panel.text(v))
		}
	}
	b.WriteString(`</svg>`)
	return Figure{ID: "cost", Title: title, SVG: template.HTML(b.String()), Policies: names,
		Caption: "Preemptions (suspends) per policy, and the GPU-hours they cost: redone work, checkpoint writes or grace periods, and resume overhead."}
}

// Figures renders the report's plots, one per question: how long jobs wait and take (CDFs),
// how busy the cluster is and how long the queue is (over time), what preemption costs
// (per policy), and the mean wait each policy buys with those costs (the Pareto plot). Subject is drawn solid, the others dashed or dotted.
func Figures(res *Results, runs []*metrics.Run) ([]Figure, error) {
	names := res.names()
	styles := Styles(names, Subject)
	var figs []Figure
	add := func(f Figure, err error) error {
		if err != nil {
			return fmt.Errorf("report: plot %q: %w", f.Title, err)
		}
		figs = append(figs, f)
		return nil
	}
	steps := []func() (Figure, error){
		func() (Figure, error) {
			return cdfFigure("wait", "How long do jobs wait?", "Share of jobs that waited at most the time on the x axis (queueing plus time suspended). Higher and further left is better.",
				"waiting time", names, styles, runs, func(j *metrics.JobRecord) float64 { return j.Wait().Seconds() })
		},
		func() (Figure, error) {
			return cdfFigure("jct", "How long do jobs take from submission to completion?", "Share of jobs that completed within the time on the x axis after their submission.",
				"job completion time", names, styles, runs, func(j *metrics.JobRecord) float64 { return j.JCT().Seconds() })
		},
		func() (Figure, error) {
			return seriesFigure("utilization", "How busy is the cluster?", "Allocated GPUs over the cluster's GPUs, averaged over time buckets.",
				"GPU utilization", fracFormat, names, styles, runs, func(pt metrics.Point) float64 { return pt.Utilization })
		},
		func() (Figure, error) {
			return seriesFigure("queue", "How long is the queue?", "Jobs waiting for GPUs, averaged over time buckets.",
				"jobs waiting", countFormat, names, styles, runs, func(pt metrics.Point) float64 { return pt.Queued })
		},
		func() (Figure, error) { return costFigure(res, names, styles), nil },
		func() (Figure, error) { return paretoFigure(res, names, styles), nil },
	}
	for _, s := range steps {
		if err := add(s()); err != nil {
			return nil, err
		}
	}
	return figs, nil
}
