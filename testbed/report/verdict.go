package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Subject is the policy the report is about; the verdict compares it with the baselines,
// and its variants (Subject + "-...") are ablations, not baselines.
const Subject = "pickyman"

// Oracles lists the baselines that read each job's true run time from the simulator (SJF
// and SRTF order jobs by it), which no scheduler on a real cluster knows; the subject
// predicts it.
var Oracles = []string{"sjf", "srtf"}

// oracleNote says which of the baselines are oracles; empty when none is.
func (r *Results) oracleNote() string {
	var o []string
	for _, n := range r.Baselines() {
		if slices.Contains(Oracles, n) {
			o = append(o, n)
		}
	}
	if len(o) == 0 {
		return ""
	}
	verb := "reads"
	if len(o) > 1 {
		verb = "read"
	}
	return fmt.Sprintf("%s %s each job's true run time, which only the simulator knows; %s predicts it.", joinAnd(o), verb, Subject)
}

// Comparison is the subject against the best baseline on one figure, where lower is
// better.
type Comparison struct {
	// Figure names what is compared ("mean wait").
	Figure string
	// Subject is the subject's value; Best the lowest value among the baselines and
	// BestPolicy the first baseline with it.
	Subject, Best float64
	BestPolicy    string
	// Unit is "s" (seconds) or "GPU-h".
	Unit string
	// Preempting is the lowest value among the baselines that preempted at all, and
	// PreemptingPolicy the first with it; set only for GPU-hours lost when the best
	// baseline lost none (it preempted nothing), since a percentage of zero says nothing.
	Preempting       float64
	PreemptingPolicy string
}

// Change is the subject's value relative to the best baseline's, in percent (negative:
// the subject is lower, so better); NaN when the best baseline's value is zero.
func (c Comparison) Change() float64 {
	if c.Best == 0 {
		return math.NaN()
	}
	return (c.Subject - c.Best) / c.Best * 100
}

// Better reports whether the subject is strictly better (lower) than every baseline.
func (c Comparison) Better() bool { return c.Subject < c.Best }

// Mark is "better", "tie" or "worse": the subject against the best baseline.
func (c Comparison) Mark() string {
	switch {
	case c.Better():
		return "better"
	case c.Subject == c.Best:
		return "tie"
	}
	return "worse"
}

func (c Comparison) value(v float64) string {
	if c.Unit == "s" {
		return humanSeconds(v)
	}
	if v < 10 {
		return fmt.Sprintf("%.2f %s", v, c.Unit)
	}
	return fmt.Sprintf("%.1f %s", v, c.Unit)
}

// Outcome says in words how the subject compares: "12% lower than srtf".
func (c Comparison) Outcome() string {
	d := c.Change()
	switch {
	case c.Subject == c.Best:
		return "equal to " + c.BestPolicy
	case math.IsNaN(d):
		s := fmt.Sprintf("%s more than %s's none", c.value(c.Subject-c.Best), c.BestPolicy)
		if c.PreemptingPolicy != "" {
			alt := Comparison{Subject: c.Subject, Best: c.Preempting, BestPolicy: c.PreemptingPolicy, Unit: c.Unit}
			s += "; " + alt.Outcome() + ", the best baseline that preempts"
		}
		return s
	case d < 0:
		return fmt.Sprintf("%s lower than %s", percent(-d), c.BestPolicy)
	case d >= 200:
		return fmt.Sprintf("%s higher than %s (%.0f times)", percent(d), c.BestPolicy, c.Subject/c.Best)
	default:
		return fmt.Sprintf("%s higher than %s", percent(d), c.BestPolicy)
	}
}

func percent(p float64) string {
	if p < 10 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Baselines returns the policies of the results that are neither the subject nor one of
// its variants, in order.
func (r *Results) Baselines() []string {
	var out []string
	for _, n := range r.names() {
		if n != Subject && !strings.HasPrefix(n, Subject+"-") {
			out = append(out, n)
		}
	}
	return out
}

// Verdict compares the subject with the best baseline on mean wait, p99 wait, makespan
// and GPU-hours lost. It is empty when the results lack the subject or any baseline.
func (r *Results) Verdict() []Comparison {
	subj, ok := r.Policies[Subject]
	base := r.Baselines()
	if !ok || len(base) == 0 {
		return nil
	}
	figures := []struct {
		name, unit string
		value      func(p *Policy) float64
		preempting bool
	}{
		{"mean wait", "s", func(p *Policy) float64 { return p.MeanWait }, false},
		{"p99 wait", "s", func(p *Policy) float64 { return p.P99Wait }, false},
		{"makespan", "s", func(p *Policy) float64 { return p.Makespan }, false},
		{"GPU-hours lost", "GPU-h", func(p *Policy) float64 { return p.GPUHoursLost }, true},
	}
	var out []Comparison
	for _, f := range figures {
		c := Comparison{Figure: f.name, Unit: f.unit, Subject: f.value(&subj), Best: math.Inf(1)}
		for _, n := range base {
			p := r.Policies[n]
			if v := f.value(&p); v < c.Best {
				c.Best, c.BestPolicy = v, n
			}
		}
		if f.preempting && c.Best == 0 {
			c.Preempting = math.Inf(1)
			for _, n := range base {
				p := r.Policies[n]
				if v := f.value(&p); p.Preemptions > 0 && v < c.Preempting {
					c.Preempting, c.PreemptingPolicy = v, n
				}
			}
			if c.PreemptingPolicy == "" {
				c.Preempting = 0
			}
		}
		out = append(out, c)
	}
	return out
}

// VerdictText writes the verdict as a few aligned lines for a terminal; empty when there
// is no verdict.
func (r *Results) VerdictText() string {
	v := r.Verdict()
	if len(v) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s against the best of %s on each figure (lower is better):\n", Subject, strings.Join(r.Baselines(), ", "))
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range v {
		fmt.Fprintf(w, "  %s\t%s %s\tbest baseline %s %s\t%s: %s\n", c.Figure, Subject, c.value(c.Subject), c.BestPolicy, c.value(c.Best), c.Mark(), c.Outcome())
	}
	w.Flush()
	if note := r.oracleNote(); note != "" {
		fmt.Fprintf(&b, "  (%s)\n", note)
	}
	return b.String()
}

// Headline sums the verdict up in one sentence; empty when there is no verdict.
func (r *Results) Headline() string {
	var better, tied, worse []string
	for _, c := range r.Verdict() {
		switch {
		case c.Better():
			better = append(better, fmt.Sprintf("%s (%s)", c.Figure, c.Outcome()))
		case c.Subject == c.Best:
			tied = append(tied, fmt.Sprintf("%s (%s)", c.Figure, c.Outcome()))
		default:
			worse = append(worse, fmt.Sprintf("%s (%s)", c.Figure, c.Outcome()))
		}
	}
	if len(better)+len(tied)+len(worse) == 0 {
		return ""
	}
	var parts []string
	if len(better) > 0 {
		parts = append(parts, "beats every baseline on "+joinAnd(better))
	}
	if len(tied) > 0 {
		parts = append(parts, "ties the best baseline on "+joinAnd(tied))
	}
	if len(worse) > 0 {
		parts = append(parts, "trails the best baseline on "+joinAnd(worse))
	}
	return fmt.Sprintf("%s %s.", Subject, joinAnd(parts))
}

func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
