package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParetoFigure checks which points the Pareto plot marks as better than the oracle:
// a mean wait at or below srtf's and at most half of its GPU-hours lost, both needed.
func TestParetoFigure(t *testing.T) {
	res := &Results{
		Order: []string{"srtf", "cheap-and-fast", "fast-but-costly", "cheap-but-slow", "tie"},
		Policies: map[string]Policy{
			"srtf":            {MeanWait: 100, GPUHoursLost: 10},
			"cheap-and-fast":  {MeanWait: 90, GPUHoursLost: 4},
			"fast-but-costly": {MeanWait: 90, GPUHoursLost: 6},
			"cheap-but-slow":  {MeanWait: 110, GPUHoursLost: 1},
			"tie":             {MeanWait: 100, GPUHoursLost: 5},
		},
	}
	names := res.names()
	f := paretoFigure(res, names, Styles(names, Subject))
	svg := string(f.SVG)
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`<circle class="point" data-policy="([^"]+)" data-better="(true|false)"`).FindAllStringSubmatch(svg, -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{"srtf": "false", "cheap-and-fast": "true", "fast-but-costly": "false", "cheap-but-slow": "false", "tie": "true"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("points marked better (-want +got):\n%s", d)
	}
	if !strings.Contains(svg, `class="pareto-region"`) {
		t.Error("no shaded region although srtf is among the policies")
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Error("a NaN or infinite coordinate")
	}

	// Without the reference nothing is shaded or marked.
	delete(res.Policies, "srtf")
	res.Order = res.Order[1:]
	svg = string(paretoFigure(res, res.names(), Styles(res.names(), Subject)).SVG)
	if strings.Contains(svg, `pareto-region`) || strings.Contains(svg, `data-better="true"`) {
		t.Error("a region or a better point without srtf to compare with")
	}
}
