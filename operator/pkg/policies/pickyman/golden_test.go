package pickyman

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions.golden")

// goldenCase is one snapshot of the decisions golden file.
type goldenCase struct {
	name string
	snap func() *sched.Snapshot
}

// goldenCases are the snapshots whose decisions testdata/decisions.golden records: the
// property tests' small random snapshots, mid-sized ones where a victim search sees only
// a prefix of the candidates, and the benchmark's snapshot.
func goldenCases() []goldenCase {
	var cs []goldenCase
	for seed := uint64(0); seed < 200; seed++ {
		cs = append(cs, goldenCase{fmt.Sprintf("small-%d", seed), func() *sched.Snapshot { return randomCase(seed) }})
	}
	for seed := uint64(1); seed <= 6; seed++ {
		cs = append(cs, goldenCase{fmt.Sprintf("mid-%d", seed), func() *sched.Snapshot {
			s := utiltesting.RandomSnapshot(seed, utiltesting.RandomConfig{
				Nodes: 120, GPUsPerNode: 8, Models: []string{"A100", "V100"},
				Running: 700, Queued: 400, Unschedulable: 0.05, Suspending: 0.02,
			})
			enrich(s, seed)
			return s
		}})
	}
	cs = append(cs, goldenCase{"bench", benchSnapshot})
	return cs
}

// benchSnapshot is BenchmarkSchedule's snapshot: 10,000+ running and 5,000 waiting jobs
// on 2,000 nodes of 8 GPUs.
func benchSnapshot() *sched.Snapshot {
	s := utiltesting.RandomSnapshot(42, utiltesting.RandomConfig{
		Nodes: 2000, GPUsPerNode: 8, Models: []string{"A100", "V100"},
		Running: 10120, Queued: 5000, Suspending: 0.01,
	})
	enrich(s, 42)
	return s
}

// goldenLine runs one variant on a fresh policy for two cycles (the second after an
// arrival, on the same snapshot) and summarizes both decisions as counts and a digest.
func goldenLine(name string, v Variant, flat bool, snap func() *sched.Snapshot) string {
	s := snap()
	o := DefaultOptions()
	o.Variant, o.FlatPriority = v, flat
	p := New(o)
	var parts []string
	for cycle := 0; cycle < 2; cycle++ {
		if cycle > 0 {
			p.Observe(sched.Event{Kind: sched.EventSubmitted, Time: s.Now, Job: s.Jobs[len(s.Jobs)-1]})
		}
		d := p.Schedule(s)
		b, err := json.Marshal(d)
		if err != nil {
			panic(err)
		}
		parts = append(parts, fmt.Sprintf("starts=%d preempt=%d resv=%d sha=%x",
			len(d.Starts), len(d.Preemptions), len(d.Reservations), sha256.Sum256(b)))
	}
	label := string(v)
	if flat {
		label = "flat"
	}
	if label == "" {
		label = "full"
	}
	return fmt.Sprintf("%s %s: %s", name, label, strings.Join(parts, " | "))
}

// TestDecisionsGolden checks that the decisions on a fixed set of snapshots are the ones
// recorded in testdata/decisions.golden, for every variant. Changes that only make a cycle
// cheaper must leave this file as it is; regenerate it (-update) only for a change of the
// policy itself, and say so.
func TestDecisionsGolden(t *testing.T) {
	var got []string
	for _, c := range goldenCases() {
		for _, v := range []struct {
			v    Variant
			flat bool
		}{{Full, false}, {Blind, false}, {Oracle, false}, {Now, false}, {Full, true}} {
			if c.name == "bench" && (v.v != Full || v.flat) {
				continue // one variant is enough on the big snapshot
			}
			got = append(got, goldenLine(c.name, v.v, v.flat, c.snap))
		}
	}
	path := filepath.Join("testdata", "decisions.golden")
	text := strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(text, "\n")); diff != "" {
		t.Errorf("decisions differ from %s (-want +got):\n%s", path, diff)
	}
}
