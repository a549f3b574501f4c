package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// namedRuns returns handRuns under the names of a baseline that does not preempt, one that
// does, and the subject.
func namedRuns(t *testing.T) (Meta, []*metrics.Run) {
	t.Helper()
	meta, runs := handRuns(t)
	for i, n := range []string{"fifo", "kueue", Subject} {
		runs[i].Policy = n
	}
	return meta, runs
}

func TestVerdict(t *testing.T) {
	pol := func(wait, p99, makespan, lost float64, preemptions int64) Policy {
		return Policy{MeanWait: wait, P99Wait: p99, Makespan: makespan, GPUHoursLost: lost, Preemptions: preemptions}
	}
	cases := map[string]struct {
		policies map[string]Policy
		order    []string
		want     []Comparison
	}{
		"best baseline per figure, ablations left out": {
			policies: map[string]Policy{
				"fifo":           pol(1000, 5000, 100, 0, 0),
				"srtf":           pol(200, 3000, 120, 8, 5),
				"kueue":          pol(400, 1000, 90, 2, 3),
				Subject:          pol(300, 800, 99, 1, 1),
				Subject + "-now": pol(1, 1, 1, 0, 1),
			},
			order: []string{"fifo", "srtf", "kueue", Subject, Subject + "-now"},
			want: []Comparison{
				{Figure: "mean wait", Unit: "s", Subject: 300, Best: 200, BestPolicy: "srtf"},
				{Figure: "p99 wait", Unit: "s", Subject: 800, Best: 1000, BestPolicy: "kueue"},
				{Figure: "makespan", Unit: "s", Subject: 99, Best: 90, BestPolicy: "kueue"},
				{Figure: "GPU-hours lost", Unit: "GPU-h", Subject: 1, Best: 0, BestPolicy: "fifo", Preempting: 2, PreemptingPolicy: "kueue"},
			},
		},
		"a tie goes to the first baseline": {
			policies: map[string]Policy{"a": pol(5, 5, 5, 1, 1), "b": pol(5, 5, 5, 1, 1), Subject: pol(5, 6, 4, 1, 1)},
			order:    []string{"a", "b", Subject},
			want: []Comparison{
				{Figure: "mean wait", Unit: "s", Subject: 5, Best: 5, BestPolicy: "a"},
				{Figure: "p99 wait", Unit: "s", Subject: 6, Best: 5, BestPolicy: "a"},
				{Figure: "makespan", Unit: "s", Subject: 4, Best: 5, BestPolicy: "a"},
				{Figure: "GPU-hours lost", Unit: "GPU-h", Subject: 1, Best: 1, BestPolicy: "a"},
			},
		},
		"no subject": {
			policies: map[string]Policy{"fifo": pol(1, 1, 1, 0, 0), "srtf": pol(1, 1, 1, 0, 0)},
			order:    []string{"fifo", "srtf"},
		},
		"no baseline": {
			policies: map[string]Policy{Subject: pol(1, 1, 1, 0, 0), Subject + "-blind": pol(1, 1, 1, 0, 0)},
			order:    []string{Subject, Subject + "-blind"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Results{Order: tc.order, Policies: tc.policies}
			if diff := cmp.Diff(tc.want, r.Verdict(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			if len(tc.want) == 0 && (r.VerdictText() != "" || r.Headline() != "") {
				t.Errorf("no verdict, yet text %q and headline %q", r.VerdictText(), r.Headline())
			}
		})
	}
}

func TestComparisonOutcome(t *testing.T) {
	cases := map[string]struct {
		c          Comparison
		want       string
		wantChange float64
	}{
		"higher":   {Comparison{Subject: 300, Best: 200, BestPolicy: "srtf"}, "50% higher than srtf", 50},
		"lower":    {Comparison{Subject: 800, Best: 1000, BestPolicy: "kueue"}, "20% lower than kueue", -20},
		"small":    {Comparison{Subject: 99, Best: 90, BestPolicy: "sjf"}, "10% higher than sjf", 10},
		"times":    {Comparison{Subject: 1340, Best: 30, BestPolicy: "srtf"}, "4367% higher than srtf (45 times)", 4366.666666666667},
		"fraction": {Comparison{Subject: 103, Best: 100, BestPolicy: "sjf"}, "3.0% higher than sjf", 3},
		"equal":    {Comparison{Subject: 5, Best: 5, BestPolicy: "a"}, "equal to a", 0},
		"over zero": {Comparison{Subject: 1.5, Best: 0, BestPolicy: "fifo", Unit: "GPU-h", Preempting: 3, PreemptingPolicy: "kueue"},
			"1.50 GPU-h more than fifo's none; 50% lower than kueue, the best baseline that preempts", math.NaN()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.c.Outcome(); got != tc.want {
				t.Errorf("Outcome() = %q, want %q", got, tc.want)
			}
			if got := tc.c.Change(); !(got == tc.wantChange || math.IsNaN(got) && math.IsNaN(tc.wantChange)) && math.Abs(got-tc.wantChange) > 1e-9 {
				t.Errorf("Change() = %v, want %v", got, tc.wantChange)
			}
		})
	}
}

func TestVerdictText(t *testing.T) {
	r := &Results{Order: []string{"fifo", "srtf", Subject}, Policies: map[string]Policy{
		"fifo":  {MeanWait: 4000, P99Wait: 9000, Makespan: 7200, GPUHoursLost: 0},
		"srtf":  {MeanWait: 200, P99Wait: 3000, Makespan: 7300, GPUHoursLost: 8, Preemptions: 4},
		Subject: {MeanWait: 300, P99Wait: 1500, Makespan: 7200, GPUHoursLost: 1, Preemptions: 1},
	}}
	lines := strings.Split(strings.TrimSpace(r.VerdictText()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want a heading, four figures and the oracle note:\n%s", len(lines), r.VerdictText())
	}
	if !strings.Contains(lines[5], "srtf reads each job's true run time") || strings.Contains(lines[5], "fifo") {
		t.Errorf("oracle note %q, want srtf alone named", lines[5])
	}
	for i, want := range [][]string{
		{"against the best of fifo, srtf"},
		{"mean wait", "5 min", "srtf 3.3 min", "worse: 50% higher than srtf"},
		{"p99 wait", "25 min", "srtf 50 min", "better: 50% lower than srtf"},
		{"makespan", "2 h", "fifo 2 h", "tie: equal to fifo"},
		{"GPU-hours lost", "fifo 0.00 GPU-h", "88% lower than srtf"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	want := "pickyman beats every baseline on p99 wait (50% lower than srtf), ties the best baseline on makespan (equal to fifo) and trails the best baseline on mean wait (50% higher than srtf) and GPU-hours lost (1.00 GPU-h more than fifo's none; 88% lower than srtf, the best baseline that preempts)."
	if got := r.Headline(); got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
}

func TestStylesDistinct(t *testing.T) {
	for _, n := range []int{6, 11, 12, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			names := []string{Subject}
			for i := 1; i < n; i++ {
				names = append(names, fmt.Sprintf("p%d", i))
			}
			st := Styles(names, Subject)
			colors, dashes, pairs := map[string]string{}, map[string]string{}, map[string]string{}
			for _, name := range names {
				s, ok := st[name]
				if !ok {
					t.Fatalf("no style for %s", name)
				}
				pair := s.Color + "/" + s.Dash
				if other, dup := pairs[pair]; dup {
					t.Errorf("%s and %s share colour and line style %s", other, name, pair)
				}
				pairs[pair] = name
				if n <= len(palette) {
					if other, dup := colors[s.Color]; dup {
						t.Errorf("%s and %s share colour %s", other, name, s.Color)
					}
					if other, dup := dashes[s.Dash]; dup {
						t.Errorf("%s and %s share line style %q", other, name, s.Dash)
					}
				}
				colors[s.Color], dashes[s.Dash] = name, name
			}
			if s := st[Subject]; s.Dash != "" || s.Width <= st["p1"].Width {
				t.Errorf("subject style %+v, want solid and wider than %+v", s, st["p1"])
			}
		})
	}
}

var seriesPath = regexp.MustCompile(`<path class="series" data-policy="([^"]+)" d="M[^"]+" fill="none" stroke="([^"]+)" stroke-width="[0-9.]+"(?: stroke-dasharray="([^"]+)")?/>`)

// TestPage checks the page's structure: the verdict first, one plot per question, every
// policy a line of its own style in each line plot, hover data that parses, the script's
// marker and error hooks, and nothing fetched from elsewhere.
func TestPage(t *testing.T) {
	meta, runs := namedRuns(t)
	res := Build(meta, runs)
	figs, err := Figures(res, runs)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, res, figs); err != nil {
		t.Fatal(err)
	}
	page := b.String()

	verdict, firstPlot := strings.Index(page, `<section id="verdict">`), strings.Index(page, `<section class="figure"`)
	if verdict < 0 || firstPlot < 0 || verdict > firstPlot {
		t.Errorf("verdict at %d, first plot at %d: want the verdict before the plots", verdict, firstPlot)
	}
	if h := res.Headline(); h == "" || !strings.Contains(page, `<p class="headline">`+template.HTMLEscapeString(h)+`</p>`) {
		t.Errorf("headline %q not on the page", h)
	}
	for _, c := range res.Verdict() {
		if !strings.Contains(page, `data-figure="`+c.Figure+`"`) {
			t.Errorf("verdict row %q missing", c.Figure)
		}
	}

	styles := Styles(res.names(), Subject)
	sections := strings.Split(page, `<section class="figure" id="fig-`)[1:]
	var ids []string
	for _, sec := range sections {
		id, _, _ := strings.Cut(sec, `"`)
		ids = append(ids, id)
		if id == "pareto" {
			for _, n := range res.names() {
				if c := strings.Count(sec, `<circle class="point" data-policy="`+n+`"`); c != 1 {
					t.Errorf("pareto plot: %d points for %s, want 1", c, n)
				}
			}
			continue
		}
		if id == "cost" {
			for _, n := range res.names() {
				if c := strings.Count(sec, `<rect class="bar" data-policy="`+n+`"`); c != 2 {
					t.Errorf("cost plot: %d bars for %s, want 2", c, n)
				}
			}
			continue
		}
		seen := map[string]bool{}
		drawn := map[string]string{}
		for _, m := range seriesPath.FindAllStringSubmatch(sec, -1) {
			pol, color, dash := m[1], m[2], m[3]
			if seen[pol] {
				t.Errorf("%s: two lines for %s", id, pol)
			}
			seen[pol] = true
			if want := styles[pol]; color != want.Color || dash != want.Dash {
				t.Errorf("%s: %s drawn %s %q, want %s %q", id, pol, color, dash, want.Color, want.Dash)
			}
			if other, dup := drawn[color+dash]; dup {
				t.Errorf("%s: %s and %s drawn alike", id, other, pol)
			}
			drawn[color+dash] = pol
		}
		if len(seen) != len(res.names()) {
			t.Errorf("%s: lines for %v, want one per policy %v", id, seen, res.names())
		}
		_, data, ok := strings.Cut(sec, `<script type="application/json" class="plot-data">`)
		data, _, _ = strings.Cut(data, `</script>`)
		var h hoverData
		if err := json.Unmarshal([]byte(data), &h); !ok || err != nil || len(h.Series) != len(res.names()) {
			t.Errorf("%s: hover data %v, %d series: %.200s", id, err, len(h.Series), data)
		}
	}
	if want := []string{"wait", "jct", "utilization", "queue", "cost", "pareto"}; !cmp.Equal(ids, want) {
		t.Errorf("plots %v, want %v", ids, want)
	}
	for _, bad := range []string{"http://", "https://", "<link", " src=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q: it must not fetch anything", bad)
		}
	}
	for _, want := range []string{"window.onerror", `id="script-errors"`, `"data-plots-ready"`, `<table id="results">`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, n := range res.names() {
		if !strings.Contains(page, `<button type="button" aria-pressed="true" data-policy="`+n+`"`) {
			t.Errorf("legend lacks a toggle for %s", n)
		}
	}
}
