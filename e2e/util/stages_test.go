package util

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestStageRows(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// Four jobs submitted a second apart; the second stage takes them 10 s apart (it limits);
	// the last job never reaches the third.
	stages := []Stage{
		{Name: "submitted", Times: []time.Time{at(0), at(1), at(2), at(3)}},
		{Name: "queued", Times: []time.Time{at(1), at(11), at(21), at(31)}},
		{Name: "admitted", Times: []time.Time{at(2), at(12), at(22), {}}},
	}
	rows := StageRows(t0, stages)
	if got := rows[0]; got.Jobs != 4 || got.First != 0 || got.Last != 3 || got.Rate != 4.0/3 || got.HasPrev {
		t.Errorf("submitted: %+v", got)
	}
	if got := rows[1]; got.Jobs != 4 || got.Rate != 4.0/30 || got.LagP50 != 10 || got.LagP90 != 28 || got.LagMax != 28 {
		t.Errorf("queued: %+v", got)
	}
	if got := rows[2]; got.Jobs != 3 || got.Last != 22 || got.LagP50 != 1 || got.LagMax != 1 {
		t.Errorf("admitted: %+v", got)
	}

	var b strings.Builder
	WriteStages(&b, t0, 10*time.Second, stages)
	out := b.String()
	for _, want := range []string{"queued     4     1        31", "t s  submitted  queued  admitted", "10   4          1       1", "40   4          4       3"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestStageRowsOneSecond(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	rows := StageRows(t0, []Stage{{Name: "s", Times: []time.Time{t0, t0, t0}}, {Name: "none", Times: make([]time.Time, 3)}})
	if rows[0].Rate != 3 {
		t.Errorf("three jobs within the same second: rate %v, want 3 (over one second)", rows[0].Rate)
	}
	if rows[1].Jobs != 0 || rows[1].Rate != 0 {
		t.Errorf("a stage no job reached: %+v", rows[1])
	}
}

func TestRequestCounts(t *testing.T) {
	parse := func(text string) map[string]float64 {
		t.Helper()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return RequestCounts(fams["apiserver_request_total"])
	}
	before := parse(`# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 10
apiserver_request_total{code="200",resource="allocations",subresource="status",verb="PUT"} 5
`)
	after := parse(`# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 110
apiserver_request_total{code="409",resource="pods",subresource="",verb="POST"} 20
apiserver_request_total{code="200",resource="allocations",subresource="status",verb="PUT"} 105
apiserver_request_total{code="200",resource="",subresource="",verb="GET"} 7
`)
	if after["POST pods"] != 110 || after["POST pods 409"] != 20 || after["PUT allocations/status"] != 105 || len(after) != 3 {
		t.Errorf("counts: %v", after)
	}
	var b strings.Builder
	WriteRequests(&b, before, after, 50, 1)
	out := b.String()
	if !strings.Contains(out, "POST pods  100    45.5%  2.00") || !strings.Contains(out, "all        220    100%   4.40") || strings.Contains(out, "allocations") {
		t.Errorf("report:\n%s", out)
	}
	if len(RequestCounts(nil)) != 0 {
		t.Error("a nil family counts requests")
	}
}
