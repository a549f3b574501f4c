package traffic

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// feed gives the estimator one sample per second with the given per-second rates (MB/s).
func feed(e *Estimator, rates []float64) {
	var bytes int64
	e.Observe(t0, 0)
	for i, r := range rates {
		bytes += int64(r * 1e6)
		e.Observe(t0.Add(time.Duration(i+1)*time.Second), bytes)
	}
}

func TestEstimator(t *testing.T) {
	steady := func(n int, r float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = r
		}
		return s
	}
	tests := map[string]struct {
		rates        []float64
		wantRate     float64 // MB/s
		tol          float64
		wantRejected int
	}{
		"steady":             {rates: steady(20, 100), wantRate: 100, tol: 0.01},
		"idle start ignored": {rates: append(steady(5, 0), steady(5, 100)...), wantRate: 100, tol: 0.01},
		"noise averages out": {
			rates:    []float64{90, 110, 95, 105, 100, 92, 108, 97, 103, 100, 99, 101, 96, 104, 100},
			wantRate: 100, tol: 4,
		},
		"burst rejected": {
			rates:    append(append(steady(10, 100), 2000), steady(5, 100)...),
			wantRate: 100, tol: 0.01, wantRejected: 1,
		},
		"stall rejected": {
			rates:    append(append(steady(10, 100), 0, 0), steady(5, 100)...),
			wantRate: 100, tol: 0.01, wantRejected: 2,
		},
		"lasting change followed": {
			rates:    append(steady(10, 100), steady(12, 300)...),
			wantRate: 300, tol: 3, wantRejected: 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := NewEstimator(Config{})
			feed(e, tc.rates)
			if got := e.Rate() / 1e6; math.Abs(got-tc.wantRate) > tc.tol {
				t.Errorf("rate %.3f MB/s, want %.1f ± %.2f", got, tc.wantRate, tc.tol)
			}
			if e.Rejected() != tc.wantRejected {
				t.Errorf("rejected %d, want %d", e.Rejected(), tc.wantRejected)
			}
		})
	}
}

func TestEstimatorCounterResetAndOrder(t *testing.T) {
	e := NewEstimator(Config{})
	e.Observe(t0, 1000)
	e.Observe(t0.Add(time.Second), 2000)   // 1000 B/s
	e.Observe(t0.Add(time.Second), 9000)   // same time: ignored
	e.Observe(t0.Add(2*time.Second), 500)  // reset: no sample
	e.Observe(t0.Add(3*time.Second), 1500) // 1000 B/s
	if e.Rate() != 1000 || e.Total() != 2000 {
		t.Fatalf("rate %v total %v, want 1000 and 2000", e.Rate(), e.Total())
	}
	if got := e.EpochTime(10_000); got != 10*time.Second {
		t.Errorf("epoch time %v, want 10s", got)
	}
	if got := NewEstimator(Config{}).EpochTime(1); got != 0 {
		t.Errorf("epoch time without a rate %v, want 0", got)
	}
}

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 9999999     100    0    0    0     0          0         0  9999999     100    0    0    0     0       0          0
  eth0: 123456789  90000    0    0    0     0          0         0  5555     40    0    0    0     0       0          0
 net1:  1000        10    0    0    0     0          0         0  0         0    0    0    0     0       0          0
`

func TestParseNetDev(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    int64
		wantErr bool
	}{
		"pod namespace":  {in: netDev, want: 123457789},
		"only loopback":  {in: strings.Join(strings.Split(netDev, "\n")[:3], "\n"), want: 0},
		"missing header": {in: "eth0: 1 2 3", wantErr: true},
		"bad counter":    {in: strings.Replace(netDev, "123456789", "12x", 1), wantErr: true},
		"truncated line": {in: strings.Join(strings.Split(netDev, "\n")[:2], "\n") + "\n  eth0: 1 2 3\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseNetDev(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" && !tc.wantErr {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadNetDevOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/dev"); err != nil {
		t.Fatalf("no /proc on this machine: %v", err)
	}
	if _, err := ReadNetDev("/proc", os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkEstimatorObserve(b *testing.B) {
	e := NewEstimator(Config{})
	var n int64
	for i := 0; b.Loop(); i++ {
		n += 1e6 + int64(i%7)*1e4
		e.Observe(t0.Add(time.Duration(i)*time.Second), n)
	}
}

// TestEstimatorBurstyReadsSampledIrregularly: a loader that reads a batch at once and then
// computes, sampled every 2 s and again a few milliseconds after each sample (the agent
// samples on every pod event too, such as its own progress patch). A short interval sees
// either nothing or a whole batch; its rate is 0 or an outlier, and rejecting the outliers
// while keeping the zeros dragged the estimate down (a real node's compute-bound job: its
// epoch time predicted 60% too long). Samples closer than MinInterval to the previous one
// are left to the next.
func TestEstimatorBurstyReadsSampledIrregularly(t *testing.T) {
	const step, batch = 0.325, 629146.0 // seconds per step, bytes read at its start
	e := NewEstimator(Config{})
	var bytes int64
	next := 0.0
	at := func(s float64) {
		for next <= s {
			bytes += int64(batch)
			next += step
		}
		e.Observe(t0.Add(time.Duration(s*float64(time.Second))), bytes)
	}
	for s := 0.0; s < 120; s += 2 {
		at(s)
		at(s + 0.02)
	}
	want := batch / step
	if got := e.Rate(); math.Abs(got-want)/want > 0.05 {
		t.Errorf("rate %.0f B/s, want %.0f within 5%% (%d samples rejected)", got, want, e.Rejected())
	}
}
