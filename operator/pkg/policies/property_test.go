package policies_test

import (
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/policies"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

const iterations = 400

func newPolicy(t testing.TB, c configv1.Policy) sched.Policy {
	t.Helper()
	p, err := policies.New(c, policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// configs are the configurations every baseline is checked under.
var configs = []configv1.Policy{
	{Name: "fifo"},
	{Name: "fifo", FIFO: &configv1.FIFOArgs{Backfill: true}},
	{Name: "sjf"},
	{Name: "srtf"},
	{Name: "tiresias"},
	{Name: "tiresias", Tiresias: &configv1.TiresiasArgs{Thresholds: []metav1.Duration{{Duration: time.Hour}, {Duration: 10 * time.Hour}, {Duration: 100 * time.Hour}}, StarveLimit: 2}},
	{Name: "kueue"},
}

// TestDecisionsAreValidAndDeterministic runs every baseline on random snapshots: the
// decisions pass Validate, every preemption is for a job that gets a reservation, and two
// fresh instances decide the same.
func TestDecisionsAreValidAndDeterministic(t *testing.T) {
	for _, c := range configs {
		t.Run(c.Name+argsSuffix(c), func(t *testing.T) {
			var starts, preemptions int
			for seed := uint64(0); seed < iterations; seed++ {
				r := rand.New(rand.NewPCG(seed, 7))
				s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
				d := newPolicy(t, c).Schedule(s)
				if err := sched.Validate(s, d); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				reserved := map[string]bool{}
				for _, r := range d.Reservations {
					reserved[r.JobID] = true
				}
				for _, p := range d.Preemptions {
					if !reserved[p.For] {
						t.Fatalf("seed %d: %s preempted for %q, which gets no reservation", seed, p.JobID, p.For)
					}
				}
				again := newPolicy(t, c).Schedule(s)
				if diff := cmp.Diff(d, again); diff != "" {
					t.Fatalf("seed %d: not deterministic (-first +second):\n%s", seed, diff)
				}
				starts += len(d.Starts)
				preemptions += len(d.Preemptions)
			}
			if starts == 0 {
				t.Errorf("no job started in %d random snapshots", iterations)
			}
			if c.Name == "fifo" || c.Name == "sjf" {
				if preemptions != 0 {
					t.Errorf("%d preemptions from a non-preemptive policy", preemptions)
				}
			} else if preemptions == 0 {
				t.Errorf("no preemption in %d random snapshots", iterations)
			}
		})
	}
}

func argsSuffix(p configv1.Policy) string {
	if p.FIFO == nil && p.Tiresias == nil && p.PickyMan == nil {
		return ""
	}
	return "/custom"
}

// TestVictimSetsAreMinimal checks, for the preemptive baselines, that without any one of
// the victims chosen for a job, the job would not fit even in the GPUs the cycle left it,
// and that victims are eligible under the policy's rule.
func TestVictimSetsAreMinimal(t *testing.T) {
	eligible := map[string]func(q, v *sched.Job) bool{
		"kueue": func(q, v *sched.Job) bool { return v.Priority < q.Priority },
		"srtf":  func(q, v *sched.Job) bool { return v.Oracle.Remaining > q.Oracle.Remaining },
		"tiresias": func(q, v *sched.Job) bool {
			return true // queue rule checked by the table tests
		},
	}
	for name, ok := range eligible {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(0); seed < iterations; seed++ {
				r := rand.New(rand.NewPCG(seed, 9))
				s := utiltesting.RandomSnapshot(seed, utiltesting.SmallRandom(r))
				d := newPolicy(t, configv1.Policy{Name: name}).Schedule(s)
				checkMinimal(t, seed, s, d, ok)
			}
		})
	}
}

func checkMinimal(t *testing.T, seed uint64, s *sched.Snapshot, d sched.Decisions, eligible func(q, v *sched.Job) bool) {
	t.Helper()
	ix := sched.NewIndex(s)
	victimsOf := map[string][]*sched.Job{}
	for _, p := range d.Preemptions {
		victimsOf[p.For] = append(victimsOf[p.For], ix.Job(p.JobID))
	}
	started := map[string]bool{}
	for _, st := range d.Starts {
		started[st.JobID] = true
	}
	newRes := map[string][]sched.Slot{}
	for _, r := range d.Reservations {
		newRes[r.JobID] = r.Placement
	}
	for _, r := range d.Reservations {
		q := ix.Job(r.JobID)
		// Free GPUs after every other decision of the cycle.
		free := map[string]int32{}
		for _, n := range s.Nodes {
			free[n.Name] = n.GPUs - n.Used
		}
		for _, st := range d.Starts {
			for _, sl := range st.Placement {
				free[sl.Node] -= sl.GPUs
			}
		}
		for _, o := range ix.Queued {
			if o.ID == q.ID || started[o.ID] {
				continue
			}
			res, ok := newRes[o.ID]
			if !ok {
				res = o.Reserved
			}
			for _, sl := range sched.HoldOf(res, append(ix.FreeingFor(o.ID), victimsOf[o.ID]...)) {
				free[sl.Node] -= sl.GPUs
			}
		}
		vs := victimsOf[q.ID]
		for _, v := range vs {
			if !eligible(q, v) {
				t.Fatalf("seed %d: %s is not an eligible victim for %s", seed, v.ID, q.ID)
			}
		}
		for skip := range vs {
			f := make(map[string]int32, len(free))
			for k, x := range free {
				f[k] = x
			}
			for i, v := range vs {
				if i != skip {
					for _, sl := range v.Placement {
						f[sl.Node] += sl.GPUs
					}
				}
			}
			if utiltesting.FitsBrute(s, f, q) {
				t.Fatalf("seed %d: victim %s of %s is not needed", seed, vs[skip].ID, q.ID)
			}
		}
	}
}

// BenchmarkSchedule measures one cycle of each baseline on 300 nodes x 8 GPUs with 2,000
// running and 5,000 queued jobs.
func BenchmarkSchedule(b *testing.B) {
	s := utiltesting.RandomSnapshot(1, utiltesting.RandomConfig{Nodes: 300, GPUsPerNode: 8, Running: 2000, Queued: 5000, Suspending: 0.02})
	for _, name := range baselines {
		b.Run(name, func(b *testing.B) {
			p := newPolicy(b, configv1.Policy{Name: name})
			b.ReportAllocs()
			cpu0, n := processCPU(), 0
			for b.Loop() {
				p.Schedule(s)
				n++
			}
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
			}
		})
	}
}
