package report

import "strings"

// Style is how one policy is drawn in every plot of the report.
type Style struct {
	// Color is a CSS colour.
	Color string
	// Dash is an SVG stroke-dasharray; empty for a solid line.
	Dash string
	// Width is the stroke width in pixels.
	Width float64
}

// palette holds twelve colours that stay apart on a white background (after the
// colour-blind-safe sets of Okabe and Ito and of Paul Tol), darkest first.
var palette = []string{
	"#000000", "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
	"#56b4e9", "#882255", "#44aa99", "#999933", "#aa4499", "#777777",
}

// dashes holds twelve stroke patterns: solid, then dashes, dots and their mixes.
var dashes = []string{
	"", "9 4", "2 3", "12 3 2 3", "5 5", "12 3 2 3 2 3", "1 6", "16 4", "6 2 1 2", "3 8", "10 2 10 6", "4 2 4 8",
}

// Styles assigns each policy of names its own colour and its own line style, in order. The
// subject (PickyMan) is drawn solid, black and wider; every other policy is dashed or
// dotted, so the subject stands out and no two policies share a colour or a pattern (up to
// twelve policies; beyond that the pair of colour and pattern still differs up to
// 132 policies).
func Styles(names []string, subject string) map[string]Style {
	out := make(map[string]Style, len(names))
	next := 1
	for _, n := range names {
		if n == subject {
			out[n] = Style{Color: palette[0], Dash: dashes[0], Width: 2.6}
			continue
		}
		i := next
		next++
		c := palette[1+(i-1)%(len(palette)-1)]
		d := dashes[1+(i-1+(i-1)/(len(palette)-1))%(len(dashes)-1)]
		w := 1.6
		if strings.HasPrefix(n, subject+"-") {
			w = 1.3
		}
		out[n] = Style{Color: c, Dash: d, Width: w}
	}
	return out
}
