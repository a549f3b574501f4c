package report

import (
	"fmt"
	"html/template"
	"math"
)

// ParetoReference is the policy the Pareto plot compares every other with: the oracle
// that knows each job's run time and preempts whenever a waiting job is shorter.
const ParetoReference = "srtf"

// paretoBetter reports whether p is at least as good as ref on both axes of the Pareto
// plot with the margins of the goal in docs/policy.md: a mean wait at or below ref's, and
// at most half of ref's GPU-hours lost to preemption.
func paretoBetter(p, ref Policy) bool {
	return p.MeanWait <= ref.MeanWait && p.GPUHoursLost <= ref.GPUHoursLost/2
}

// paretoFigure draws each policy as a point: GPU-hours lost to preemption (x, linear) and
// mean waiting time (y, log scale), lower left being better. With ParetoReference among the
// policies, the region where a policy waits no longer on average and loses at most half of
// its GPU-hours is shaded, and each point says (data-better) whether it lies in it.
func paretoFigure(res *Results, names []string, styles map[string]Style) Figure {
	const title = "What does each policy's waiting time cost in GPU-hours?"
	var b svgBuilder
	top, hiWait, loWait := 0.0, 1.0, math.Inf(1)
	for _, n := range names {
		p := res.Policies[n]
		top = math.Max(top, p.GPUHoursLost)
		hiWait = math.Max(hiWait, p.MeanWait)
		loWait = math.Min(loWait, p.MeanWait)
	}
	if top <= 0 {
		top = 1
	}
	x := axis{min: 0, max: niceCeil(top * 1.08), format: countFormat, label: "GPU-hours lost to preemption"}
	ymin := 1.0
	if loWait > 10 {
		ymin = math.Pow(10, math.Floor(math.Log10(loWait/2)))
	}
	y := axis{min: ymin, max: math.Max(ymin*10, hiWait*1.5), log: true, format: secondsFormat, label: "mean waiting time (log scale)"}
	b.frame(title, x, y)
	px := func(v float64) float64 { return marginL + x.frac(v)*innerW }
	py := func(v float64) float64 { return marginT + (1-y.frac(math.Max(v, y.min)))*innerH }
	ref, hasRef := res.Policies[ParetoReference]
	if hasRef {
		// The goal's region: at most half the reference's GPU-hours, no longer a wait.
		x1, y0 := px(ref.GPUHoursLost/2), py(ref.MeanWait)
		b.f(`<rect class="pareto-region" x="%d" y="%.1f" width="%.1f" height="%.1f" fill="#2a9d8f" fill-opacity="0.12"><title>mean wait at or below %s's, at most half its GPU-hours lost</title></rect>`,
			marginL, y0, x1-marginL, float64(marginT+innerH)-y0, esc(ParetoReference))
		b.f(`<line class="pareto-ref" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#2a9d8f" stroke-dasharray="4 3"/>`, marginL, y0, marginL+innerW, y0)
		b.f(`<line class="pareto-ref" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#2a9d8f" stroke-dasharray="4 3"/>`, x1, marginT, x1, marginT+innerH)
	}
	for i, n := range names {
		p := res.Policies[n]
		st := styles[n]
		cx, cy := px(p.GPUHoursLost), py(p.MeanWait)
		better := hasRef && n != ParetoReference && paretoBetter(p, ref)
		b.f(`<circle class="point" data-policy="%s" data-better="%t" cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s: mean wait %s, %.1f GPU-hours lost</title></circle>`,
			esc(n), better, cx, cy, st.Color, esc(n), esc(humanSeconds(p.MeanWait)), p.GPUHoursLost)
		// Labels alternate above and below their point so that neighbours overlap less.
		dy := -9.0
		if i%2 == 1 {
			dy = 16
		}
		b.f(`<text class="value" data-policy="%s" x="%.1f" y="%.1f">%s</text>`, esc(n), cx+7, cy+dy, esc(n))
	}
	b.WriteString(`</svg>`)
	caption := "Each policy's mean waiting time against the GPU-hours it lost to preemption (redone work, checkpoint writes or grace periods, resume overhead). Lower left is better."
	if hasRef {
		caption += fmt.Sprintf(" The shaded region is Pareto-better than the oracle %s: a mean wait at or below its %s, losing at most half of its %.1f GPU-hours.",
			ParetoReference, humanSeconds(ref.MeanWait), ref.GPUHoursLost)
	}
	return Figure{ID: "pareto", Title: title, Caption: caption, SVG: template.HTML(b.String()), Policies: names}
}
