//go:build browser

package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium returns the browser to run: $CHROMIUM, else chromium on the PATH. Without
// one the test fails when CI is set (make test-report-browser installs it first) and is
// skipped otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	name := os.Getenv("CHROMIUM")
	if name == "" {
		name = "chromium"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no browser %q: %v (make report-deps installs Debian's chromium)", name, err)
		}
		t.Skipf("no browser %q: %v (make report-deps installs Debian's chromium)", name, err)
	}
	return path
}

// dumpDOM loads page headless and returns the DOM after its scripts ran.
func dumpDOM(t *testing.T, browser, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.String())
	}
	return string(out)
}

var (
	readyAttr  = regexp.MustCompile(`<html[^>]* data-plots-ready="(\d+)"`)
	errorsAttr = regexp.MustCompile(`<html[^>]* data-script-errors="(\d+)"`)
	errorsPre  = regexp.MustCompile(`(?s)<pre id="script-errors"[^>]*>(.*?)</pre>`)
)

// check returns what is wrong with a loaded page: a plot count other than want, or a
// recorded script error.
func check(dom string, want int) []string {
	var bad []string
	if m := readyAttr.FindStringSubmatch(dom); m == nil || m[1] != strconv.Itoa(want) {
		bad = append(bad, "plots not set up: data-plots-ready "+strings.Join(m, " ")+", want "+strconv.Itoa(want))
	}
	if m := errorsAttr.FindStringSubmatch(dom); m != nil {
		bad = append(bad, "script errors: "+m[1])
	}
	if m := errorsPre.FindStringSubmatch(dom); m == nil || strings.TrimSpace(m[1]) != "" {
		bad = append(bad, "error list missing or not empty: "+strings.Join(m, " "))
	}
	return bad
}

// TestReportInBrowser loads a report page in headless Chromium and checks that its script
// set up every plot and raised no error; the same check must reject a page whose script
// throws.
func TestReportInBrowser(t *testing.T) {
	browser := chromium(t)
	meta, runs := namedRuns(t)
	// The first policy's queue dwarfs the others', so that hiding it must redraw the queue
	// plot on a smaller y axis.
	for i := range runs[0].Series {
		runs[0].Series[i].Queued = 10 * (runs[0].Series[i].Queued + 1)
	}
	dir := t.TempDir()
	if _, err := Write(dir, meta, runs); err != nil {
		t.Fatal(err)
	}
	res := Build(meta, runs)
	figs, err := Figures(res, runs)
	if err != nil {
		t.Fatal(err)
	}
	plots := len(figs) // every figure is a plot the script sets up
	page := filepath.Join(dir, "report.html")
	if bad := check(dumpDOM(t, browser, page), plots); len(bad) > 0 {
		t.Errorf("report.html in %s:\n%s", browser, strings.Join(bad, "\n"))
	}

	// Pointer and legend: a move over each line plot shows one row per policy; a click on
	// the first policy's button hides its lines and drops its row.
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probe := `<script>
(function () {
  function move(svg) {
    var r = svg.getBoundingClientRect();
    svg.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width * 0.6, clientY: r.top + r.height / 2, bubbles: true}));
  }
  var rows = [];
  document.querySelectorAll("section.figure figure").forEach(function (fig) {
    var tip = fig.querySelector(".tooltip");
    if (!tip) { return; }
    move(fig.querySelector("svg.plot"));
    rows.push(tip.hidden ? -1 : tip.children.length - 1);
  });
  document.querySelector("#legend button[data-policy]").click();
  var after = document.querySelector("section.figure figure .tooltip");
  move(document.querySelector("section.figure svg.plot"));
  var hiddenLines = document.querySelectorAll("path.series.hidden-policy").length;
  var buttons = document.querySelectorAll("#legend button[data-policy]");
  for (var i = 1; i < buttons.length - 1; i++) { buttons[i].click(); }
  document.documentElement.setAttribute("data-probe", rows.join(",") + ";" + (after.children.length - 1) + ";" + hiddenLines + ";" +
    document.querySelector("#fig-utilization svg").getAttribute("data-ymax") + ";" + document.querySelector("#fig-queue svg").getAttribute("data-ymax"));
})();
</script></body>`
	probed := filepath.Join(dir, "probed.html")
	if err := os.WriteFile(probed, []byte(strings.Replace(string(b), "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, browser, probed)
	if bad := check(dom, plots); len(bad) > 0 {
		t.Errorf("report.html under the pointer:\n%s", strings.Join(bad, "\n"))
	}
	n := len(runs)
	// Four line plots, each a row per policy; after hiding one, a row less in the first
	// and its line hidden in each of the four. With every policy but the last hidden, the
	// plots over time fit their y axis to the last one's values.
	var fitted []string
	for _, f := range figs {
		if f.ID != "utilization" && f.ID != "queue" {
			continue
		}
		var h hoverData
		if err := json.Unmarshal([]byte(f.Data), &h); err != nil {
			t.Fatal(err)
		}
		top := 0.0
		for _, p := range h.Series[len(h.Series)-1].Points {
			top = math.Max(top, p[1])
		}
		if top <= 0 {
			top = 1
		}
		if f.ID == "queue" && niceCeil(top) == h.YMax {
			t.Fatalf("queue plot: y axis up to %v with every policy and with the last alone: the probe would not see a redraw", h.YMax)
		}
		fitted = append(fitted, strconv.FormatFloat(niceCeil(top), 'g', -1, 64))
	}
	want := fmt.Sprintf("%d,%d,%d,%d;%d;%d;%s", n, n, n, n, n-1, 4, strings.Join(fitted, ";"))
	if m := regexp.MustCompile(`data-probe="([^"]*)"`).FindStringSubmatch(dom); m == nil || m[1] != want {
		t.Errorf("tooltip rows; rows after hiding one; hidden lines = %v, want %s", m, want)
	}

	// A page whose script fails must fail the same check.
	broken := strings.Replace(string(b), `"use strict";`, `"use strict"; undefinedFunction();`, 1)
	if broken == string(b) {
		t.Fatal("could not break the page's script")
	}
	brokenPage := filepath.Join(dir, "broken.html")
	if err := os.WriteFile(brokenPage, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	dom = dumpDOM(t, browser, brokenPage)
	bad := check(dom, plots)
	if m := errorsPre.FindStringSubmatch(dom); len(bad) < 2 || m == nil || !strings.Contains(m[1], "undefinedFunction") {
		t.Errorf("a page whose script throws passed the check or its error was not recorded (%v)", bad)
	}
}
