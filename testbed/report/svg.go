package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The report draws its plots as inline SVG: axes, grid, one path per policy, and the data
// the page's script needs to show values under the pointer.

// Plot geometry in SVG user units.
const (
	plotW, plotH              = 760, 330
	marginL, marginR          = 64, 16
	marginT, marginB          = 14, 46
	innerW, innerH            = plotW - marginL - marginR, plotH - marginT - marginB
	maxSeriesPoints           = 400
	fracFormat, countFormat   = "frac", "count"
	secondsFormat, hourFormat = "seconds", "hours"
)

// series is one policy's line.
type series struct {
	Policy string       `json:"policy"`
	Points [][2]float64 `json:"points"`
}

// axis maps data values to pixels.
type axis struct {
	min, max float64
	log      bool
	// format names how tick labels and hover values are written (secondsFormat, ...).
	format string
	label  string
}

func (a axis) frac(v float64) float64 {
	if a.log {
		v = math.Log10(math.Max(v, a.min))
		return (v - math.Log10(a.min)) / (math.Log10(a.max) - math.Log10(a.min))
	}
	return (v - a.min) / (a.max - a.min)
}

// ticks returns the tick values: powers of ten and round durations on a log axis of
// seconds, "nice" steps on a linear one.
func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		for _, t := range []float64{1, 10, 60, 600, 3600, 36000, 86400, 864000, 8640000, 86400000} {
			if t >= a.min && t <= a.max*1.0001 {
				out = append(out, t)
			}
		}
		return out
	}
	step := niceStep((a.max - a.min) / 5)
	for t := math.Ceil(a.min/step) * step; t <= a.max+step*1e-9; t += step {
		out = append(out, t)
	}
	return out
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// label1 writes one tick value in the axis' format.
func (a axis) label1(v float64) string { return formatValue(a.format, v) }

func formatValue(format string, v float64) string {
	switch format {
	case secondsFormat:
		return humanSeconds(v)
	case fracFormat:
		return trimFloat(v, 2)
	case hourFormat:
		return trimFloat(v, 1) + " h"
	default:
		return trimFloat(v, 1)
	}
}

func trimFloat(v float64, prec int) string {
	s := fmt.Sprintf("%.*f", prec, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// humanSeconds writes a duration in seconds in the largest unit that keeps it readable.
func humanSeconds(s float64) string {
	switch {
	case s < 120:
		return trimFloat(s, 0) + " s"
	case s < 3600:
		return trimFloat(s/60, 1) + " min"
	case s < 48*3600:
		return trimFloat(s/3600, 1) + " h"
	default:
		return trimFloat(s/86400, 1) + " d"
	}
}

// svgBuilder accumulates one plot's markup.
type svgBuilder struct{ strings.Builder }

func (b *svgBuilder) f(format string, args ...any) { fmt.Fprintf(b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// frame draws the background, grid, ticks and axis labels.
func (b *svgBuilder) frame(title string, x, y axis) {
	b.f(`<svg class="plot" viewBox="0 0 %d %d" role="img" aria-label="%s">`, plotW, plotH, esc(title))
	b.f(`<rect class="area" x="%d" y="%d" width="%d" height="%d"/>`, marginL, marginT, innerW, innerH)
	for _, t := range x.ticks() {
		px := marginL + x.frac(t)*innerW
		b.f(`<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, px, marginT, px, marginT+innerH)
		b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, px, marginT+innerH+16, esc(x.label1(t)))
	}
	b.WriteString(`<g class="yaxis">`)
	for _, t := range y.ticks() {
		py := marginT + (1-y.frac(t))*innerH
		b.f(`<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, marginL, py, marginL+innerW, py)
		b.f(`<text class="tick" x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, marginL-6, py, esc(y.label1(t)))
	}
	b.WriteString(`</g>`)
	b.f(`<text class="axis-label" x="%d" y="%d" text-anchor="middle">%s</text>`, marginL+innerW/2, plotH-6, esc(x.label))
	b.f(`<text class="axis-label" transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`, marginT+innerH/2, esc(y.label))
}

// line draws one policy's series.
func (b *svgBuilder) line(s series, st Style, x, y axis) {
	var d strings.Builder
	for i, p := range s.Points {
		cmd := 'L'
		if i == 0 {
			cmd = 'M'
		}
		fmt.Fprintf(&d, "%c%.1f %.1f", cmd, marginL+x.frac(p[0])*innerW, marginT+(1-y.frac(p[1]))*innerH)
	}
	dash := ""
	if st.Dash != "" {
		dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.Dash)
	}
	b.f(`<path class="series" data-policy="%s" d="%s" fill="none" stroke="%s" stroke-width="%.1f"%s/>`,
		esc(s.Policy), d.String(), st.Color, st.Width, dash)
}

// thin keeps at most maxSeriesPoints points of pts, always the first and the last.
func thin(pts [][2]float64) [][2]float64 {
	if len(pts) <= maxSeriesPoints {
		return pts
	}
	step := float64(len(pts)-1) / float64(maxSeriesPoints-1)
	out := make([][2]float64, 0, maxSeriesPoints)
	for i := range maxSeriesPoints {
		out = append(out, pts[int(math.Round(float64(i)*step))])
	}
	return out
}
