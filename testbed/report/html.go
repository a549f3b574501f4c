package report

import (
	"html/template"
	"io"
	"strings"
)

// The page is one file: styles, plots (inline SVG) and a short script, nothing fetched.
// The script records any error into #script-errors (and data-script-errors on <html>),
// adds a legend that hides and shows policies, shows values under the pointer, and sets
// data-plots-ready on <html> to the number of plots it prepared. The browser test reads
// those two attributes.
var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>PickyMan simulation report</title>
<script>
window.reportErrors = [];
window.onerror = function (msg, src, line, col) {
  window.reportErrors.push(msg + " (line " + line + ":" + col + ")");
  document.documentElement.setAttribute("data-script-errors", String(window.reportErrors.length));
  var el = document.getElementById("script-errors");
  if (el) { el.textContent = window.reportErrors.join("\n"); el.hidden = false; }
};
</script>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 62em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin: 1.6em 0 0.3em; }
.meta { color: #555; margin: 0; }
#verdict { border: 2px solid #222; border-radius: 6px; padding: 0.6em 1em; margin: 1em 0; background: #f7f7f2; }
#verdict .headline { font-size: 1.15em; font-weight: 600; margin: 0.2em 0 0.6em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
#verdict table { background: #fff; }
#verdict td { white-space: nowrap; }
#verdict td:last-child { white-space: normal; text-align: left; }
tr.better td:last-child { color: #0a6b2c; font-weight: 600; }
tr.worse td:last-child { color: #a33; font-weight: 600; }
#legend { position: sticky; top: 0; background: #fff; padding: 0.4em 0; border-bottom: 1px solid #ddd; z-index: 2; }
#legend button { font: inherit; font-size: 0.9em; border: 1px solid #bbb; background: #fff; border-radius: 4px; margin: 0.15em; padding: 0.1em 0.5em; cursor: pointer; }
#legend button[aria-pressed="false"] { opacity: 0.35; text-decoration: line-through; }
#legend svg { vertical-align: middle; margin-right: 0.3em; }
figure { margin: 0.4em 0 1em; position: relative; }
figcaption { color: #555; font-size: 0.9em; }
svg.plot { width: 100%; height: auto; display: block; }
svg.plot .area { fill: #fff; stroke: #888; }
svg.plot .grid { stroke: #e4e4e4; }
svg.plot .tick, svg.plot .value { font-size: 11px; fill: #444; }
svg.plot .axis-label { font-size: 12px; fill: #222; }
svg.plot .cursor { stroke: #888; stroke-width: 1; }
.hidden-policy { display: none; }
rect.hidden-policy { display: inline; opacity: 0.12; }
.tooltip { position: absolute; pointer-events: none; background: rgba(255,255,255,0.95); border: 1px solid #999; border-radius: 4px; padding: 0.3em 0.5em; font-size: 0.8em; white-space: nowrap; }
.tooltip .sw { display: inline-block; width: 1.6em; height: 0; border-top: 3px solid; margin-right: 0.4em; vertical-align: middle; }
dl.defs dt { font-weight: 600; }
#script-errors { color: #a00; }
</style>
</head>
<body>
<h1>PickyMan simulation report</h1>
<p class="meta">{{.R.Trace}}{{if .R.Format}} ({{.R.Format}}){{end}} on {{.R.Cluster}} ({{.R.GPUs}} GPUs), seed {{.R.Seed}};
{{if .R.Ideal}}ideal physics: preemption free{{else}}checkpoint-aware physics{{end}};
synthesized fields: {{if .R.SynthesizedFields}}{{.Synth}}{{else}}none{{end}}.</p>
<pre id="script-errors" hidden></pre>
{{if .Verdict}}<section id="verdict">
<p class="headline">{{.Headline}}</p>
<table>
<tr><th>figure (lower is better)</th><th>{{.Subject}}</th><th>best baseline</th><th>{{.Subject}} against it</th></tr>
{{range .Verdict}}<tr class="{{.Class}}" data-figure="{{.Figure}}"><td>{{.Figure}}</td><td>{{.Subject}}</td><td>{{.BestPolicy}}: {{.Best}}</td><td>{{.Outcome}}</td></tr>
{{end}}</table>
<p class="meta">Baselines: {{.Baselines}}.{{with .OracleNote}} {{.}}{{end}}</p>
</section>{{end}}
<div id="legend" role="group" aria-label="policies: click to hide or show">
{{range .Legend}}<button type="button" aria-pressed="true" data-policy="{{.Name}}" data-color="{{.Color}}" data-dash="{{.Dash}}"><svg width="40" height="10" aria-hidden="true"><line x1="0" y1="5" x2="40" y2="5" stroke="{{.Color}}" stroke-width="{{.Width}}"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}/></svg>{{.Name}}</button>
{{end}}<button type="button" id="show-all">show all</button>
</div>
{{range .Figures}}<section class="figure" id="fig-{{.ID}}">
<h2>{{.Title}}</h2>
<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
{{if .Data}}<script type="application/json" class="plot-data">{{.Data}}</script>{{end}}
</figure>
</section>
{{end}}
<h2>Policies side by side</h2>
<table id="results">
<tr>{{range index .Cells 0}}<th>{{.}}</th>{{end}}</tr>
{{range slice .Cells 1}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<dl class="defs">
<dt>waiting time</dt><dd>all time a job did not hold GPUs before it completed: queueing plus time suspended.</dd>
<dt>utilization</dt><dd>allocated GPU-time over cluster GPU-time across the makespan.</dd>
<dt>GPU-hours lost</dt><dd>redone work, suspend waits and resume overhead.</dd>
</dl>
<script>
(function () {
  "use strict";
  var hidden = {};
  function trim(s) { return s.indexOf(".") < 0 ? s : s.replace(/0+$/, "").replace(/\.$/, ""); }
  function secs(s) {
    if (s < 120) { return s.toFixed(0) + " s"; }
    if (s < 3600) { return trim((s / 60).toFixed(1)) + " min"; }
    if (s < 172800) { return trim((s / 3600).toFixed(1)) + " h"; }
    return trim((s / 86400).toFixed(1)) + " d";
  }
  function fmt(format, v) {
    switch (format) {
      case "seconds": return secs(v);
      case "frac": return trim(v.toFixed(3));
      case "hours": return trim(v.toFixed(1)) + " h";
      default: return trim(v.toFixed(1));
    }
  }
  // at returns the series' value at x: the last point at or before x.
  function at(points, x) {
    var lo = 0, hi = points.length - 1, found = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (points[mid][0] <= x) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    return found;
  }
  var styles = {};
  document.querySelectorAll("#legend button[data-policy]").forEach(function (b) {
    styles[b.getAttribute("data-policy")] = { color: b.getAttribute("data-color"), dash: b.getAttribute("data-dash") };
  });
  function niceStep(raw) {
    if (!(raw > 0) || !isFinite(raw)) { return 1; }
    var p = Math.pow(10, Math.floor(Math.log10(raw))), m = [1, 2, 5, 10];
    for (var i = 0; i < m.length; i++) { if (m[i] * p >= raw) { return m[i] * p; } }
    return 10 * p;
  }
  function tickLabel(format, v) { return format === "frac" ? trim(v.toFixed(2)) : trim(v.toFixed(1)); }
  function el(ns, name, attrs, text) {
    var e = document.createElementNS(ns, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  // fit redraws a plot over time with its y axis fitted to the policies shown.
  var plots = [];
  function fit(p) {
    var d = p.d, top = 0;
    d.series.forEach(function (s) {
      if (hidden[s.policy]) { return; }
      s.points.forEach(function (q) { top = Math.max(top, q[1]); });
    });
    if (!(top > 0)) { top = 1; }
    var step = niceStep(top / 5), ymax = Math.ceil(top / step - 1e-9) * step;
    p.svg.setAttribute("data-ymax", String(ymax));
    if (ymax === p.ymax) { return; }
    p.ymax = ymax;
    var A = d.area;
    function px(x) { return A[0] + (x - d.x.min) / (d.x.max - d.x.min) * A[2]; }
    function py(y) { return A[1] + (1 - (y - d.ymin) / (ymax - d.ymin)) * A[3]; }
    p.svg.querySelectorAll("path.series").forEach(function (path) {
      var s = d.series.filter(function (s) { return s.policy === path.getAttribute("data-policy"); })[0];
      if (!s) { return; }
      path.setAttribute("d", s.points.map(function (q, i) {
        return (i === 0 ? "M" : "L") + px(q[0]).toFixed(1) + " " + py(q[1]).toFixed(1);
      }).join(""));
    });
    var g = p.svg.querySelector("g.yaxis");
    g.replaceChildren();
    var ystep = niceStep((ymax - d.ymin) / 5);
    for (var t = Math.ceil(d.ymin / ystep) * ystep; t <= ymax + ystep * 1e-9; t += ystep) {
      var y = py(t).toFixed(1);
      g.appendChild(el(p.svg.namespaceURI, "line", {"class": "grid", x1: A[0], y1: y, x2: A[0] + A[2], y2: y}));
      g.appendChild(el(p.svg.namespaceURI, "text", {"class": "tick", x: A[0] - 6, y: y, "text-anchor": "end", "dominant-baseline": "middle"}, tickLabel(d.yformat, t)));
    }
  }
  function apply() {
    document.querySelectorAll("[data-policy]").forEach(function (el) {
      var off = !!hidden[el.getAttribute("data-policy")];
      if (el.tagName.toLowerCase() === "button") { el.setAttribute("aria-pressed", off ? "false" : "true"); }
      else { el.classList.toggle("hidden-policy", off); }
    });
    plots.forEach(function (p) { if (p.d.rescale) { fit(p); } });
  }
  document.querySelectorAll("#legend button[data-policy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var p = b.getAttribute("data-policy");
      hidden[p] = !hidden[p];
      apply();
    });
  });
  document.getElementById("show-all").addEventListener("click", function () { hidden = {}; apply(); });
  var ready = 0;
  document.querySelectorAll("section.figure figure").forEach(function (fig) {
    var svg = fig.querySelector("svg.plot");
    if (!svg) { return; }
    var dataEl = fig.querySelector("script.plot-data");
    if (!dataEl) { ready++; return; }
    var d = JSON.parse(dataEl.textContent);
    plots.push({d: d, svg: svg, ymax: d.ymax});
    var vb = svg.viewBox.baseVal;
    var hover = svg.querySelector("g.hover"), cursor = svg.querySelector("line.cursor");
    var tip = document.createElement("div");
    tip.className = "tooltip";
    tip.hidden = true;
    fig.appendChild(tip);
    function dataX(sx) {
      var f = (sx - d.area[0]) / d.area[2];
      if (d.x.log) {
        var a = Math.log10(d.x.min), b = Math.log10(d.x.max);
        return Math.pow(10, a + f * (b - a));
      }
      return d.x.min + f * (d.x.max - d.x.min);
    }
    svg.addEventListener("mousemove", function (e) {
      var r = svg.getBoundingClientRect();
      var sx = (e.clientX - r.left) * vb.width / r.width;
      if (sx < d.area[0] || sx > d.area[0] + d.area[2]) { hover.setAttribute("visibility", "hidden"); tip.hidden = true; return; }
      var x = dataX(sx);
      cursor.setAttribute("x1", sx); cursor.setAttribute("x2", sx);
      hover.setAttribute("visibility", "visible");
      var head = document.createElement("div");
      head.textContent = d.x.label.replace(/ \(.*\)$/, "") + ": " + fmt(d.x.format, x);
      tip.replaceChildren(head);
      d.series.forEach(function (s) {
        if (hidden[s.policy] || !s.points || s.points.length === 0) { return; }
        var i = at(s.points, x);
        var v = i < 0 ? (d.x.log ? 0 : s.points[0][1]) : s.points[i][1];
        var row = document.createElement("div");
        var sw = document.createElement("span");
        sw.className = "sw";
        sw.style.borderTopColor = styles[s.policy] ? styles[s.policy].color : "#000";
        if (styles[s.policy] && styles[s.policy].dash) { sw.style.borderTopStyle = "dashed"; }
        row.appendChild(sw);
        row.appendChild(document.createTextNode(s.policy + ": " + fmt(d.yformat, v)));
        tip.appendChild(row);
      });
      var fr = fig.getBoundingClientRect();
      var left = e.clientX - fr.left + 14;
      if (left > fr.width - 200) { left = e.clientX - fr.left - 214; }
      tip.style.left = left + "px";
      tip.style.top = (e.clientY - fr.top + 10) + "px";
      tip.hidden = false;
    });
    svg.addEventListener("mouseleave", function () { hover.setAttribute("visibility", "hidden"); tip.hidden = true; });
    ready++;
  });
  document.documentElement.setAttribute("data-plots-ready", String(ready));
})();
</script>
</body>
</html>
`))

// verdictRow is one line of the page's verdict, formatted.
type verdictRow struct {
	Figure, Subject, Best, BestPolicy, Outcome, Class string
}

// legendEntry is one policy's button in the legend.
type legendEntry struct {
	Name string
	Style
}

// WriteHTML writes the self-contained report page.
func WriteHTML(w io.Writer, res *Results, figs []Figure) error {
	var rows []verdictRow
	for _, c := range res.Verdict() {
		rows = append(rows, verdictRow{Figure: c.Figure, Subject: c.value(c.Subject), Best: c.value(c.Best),
			BestPolicy: c.BestPolicy, Outcome: c.Outcome(), Class: c.Mark()})
	}
	names := res.names()
	styles := Styles(names, Subject)
	var legend []legendEntry
	for _, n := range names {
		legend = append(legend, legendEntry{Name: n, Style: styles[n]})
	}
	return page.Execute(w, struct {
		R          *Results
		Synth      string
		Subject    string
		Headline   string
		Verdict    []verdictRow
		Baselines  string
		OracleNote string
		Legend     []legendEntry
		Cells      [][]string
		Figures    []Figure
	}{res, strings.Join(res.SynthesizedFields, ", "), Subject, res.Headline(), rows, strings.Join(res.Baselines(), ", "),
		res.oracleNote(), legend, res.cells(), figs})
}
