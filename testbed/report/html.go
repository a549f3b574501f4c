package report

import (
	"html/template"
	"io"
	"strings"
)

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>PickyMan simulation report</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { display: block; margin: 1em 0; max-width: 100%; }
dt { font-weight: bold; float: left; width: 12em; }
</style>
</head>
<body>
<h1>PickyMan simulation report</h1>
<dl>
<dt>trace</dt><dd>{{.R.Trace}}{{if .R.Format}} ({{.R.Format}}){{end}}</dd>
<dt>cluster</dt><dd>{{.R.Cluster}} ({{.R.GPUs}} GPUs)</dd>
<dt>seed</dt><dd>{{.R.Seed}}</dd>
<dt>physics</dt><dd>{{if .R.Ideal}}ideal: preemption free{{else}}checkpoint-aware (docs/simulator.md){{end}}</dd>
<dt>synthesized fields</dt><dd>{{if .R.SynthesizedFields}}{{.Synth}}{{else}}none{{end}}</dd>
</dl>
<h2>Policies side by side</h2>
<table>
<tr>{{range index .Cells 0}}<th>{{.}}</th>{{end}}</tr>
{{range slice .Cells 1}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p>Waiting time is all time a job did not hold GPUs before it completed (queueing plus
suspended); utilization is allocated GPU-time over cluster GPU-time across the makespan;
GPU-hours lost count redone work, suspend waits and resume overhead.</p>
{{range .Figures}}<h2>{{.Title}}</h2>
<img alt="{{.Title}}" src="{{.URI}}">
{{end}}</body>
</html>
`))

// WriteHTML writes the self-contained report page.
func WriteHTML(w io.Writer, res *Results, figs []Figure) error {
	type fig struct {
		Title string
		URI   template.URL
	}
	var fs []fig
	for _, f := range figs {
		// The URIs are data: URIs of PNGs this package rendered.
		fs = append(fs, fig{Title: f.Title, URI: template.URL(f.URI)})
	}
	return page.Execute(w, struct {
		R       *Results
		Synth   string
		Cells   [][]string
		Figures []fig
	}{res, strings.Join(res.SynthesizedFields, ", "), res.cells(), fs})
}
