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

func TestRequests(t *testing.T) {
	parse := func(text string) Requests {
		t.Helper()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return ReadRequests(fams)
	}
	before := parse(`# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 10
apiserver_request_total{code="200",resource="allocations",subresource="status",verb="PUT"} 5
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="POST",le="+Inf"} 10
apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="POST"} 1
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="POST"} 10
`)
	after := parse(`# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 110
apiserver_request_total{code="409",resource="pods",subresource="",verb="POST"} 20
apiserver_request_total{code="200",resource="allocations",subresource="status",verb="PUT"} 105
apiserver_request_total{code="200",resource="",subresource="",verb="GET"} 7
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="POST",le="+Inf"} 130
apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="POST"} 31
apiserver_request_duration_seconds_count{resource="pods",subresource="",verb="POST"} 130
`)
	if after.Count["POST pods"] != 110 || after.Count["POST pods 409"] != 20 || after.Count["PUT allocations/status"] != 105 || len(after.Count) != 3 {
		t.Errorf("counts: %v", after.Count)
	}
	var b strings.Builder
	WriteRequests(&b, before, after, 50, 2)
	out := b.String()
	// POST pods: 120 more samples taking 30 s more, 250 ms each.
	for _, want := range []string{"POST pods               100    45.5%  2.00     250", "PUT allocations/status  100    45.5%  2.00     -", "all                     220    100%   4.40     -"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "409") {
		t.Errorf("report of 2 rows shows a third:\n%s", out)
	}
	if r := ReadRequests(nil); len(r.Count) != 0 || len(r.Samples) != 0 {
		t.Error("no metrics count requests")
	}
}
