package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pickyman/pickyman/operator/pkg/sched"
	"github.com/pickyman/pickyman/testbed/sim/simtest"
	"github.com/pickyman/pickyman/traces"
)

// resizer is a hand policy for elastic jobs on one node "node-0": it starts queued jobs on
// their reservation or first fit; when a job waits and an elastic job runs, it shrinks that
// job to its minimum for the waiting one; when nothing waits, it grows a shrunk job back to
// the size it asked for (baseline workers).
func resizer(want map[string]int32) *simtest.Func {
	return &simtest.Func{PolicyName: "test-resizer", F: func(s *sched.Snapshot) sched.Decisions {
		var d sched.Decisions
		taken := map[string]int32{}
		waiting := false
		var running []*sched.Job
		for _, j := range s.Jobs {
			switch {
			case j.Phase == sched.Running:
				running = append(running, j)
			case j.Phase == sched.Queued && j.Reserved != nil:
				if g := sched.PlacementGPUs(j.Reserved); s.Nodes[0].Free()-taken["node-0"] >= g {
					taken["node-0"] += g
					d.Starts = append(d.Starts, sched.Start{JobID: j.ID, Placement: j.Reserved})
				}
			case j.Phase == sched.Queued:
				if p := simtest.FirstFit(s, j, taken); p != nil {
					d.Starts = append(d.Starts, sched.Start{JobID: j.ID, Placement: p})
					continue
				}
				for _, r := range running {
					if r.Elastic() && r.Workers > r.MinWorkers {
						keep := []sched.Slot{{Node: "node-0", Workers: r.MinWorkers, GPUs: r.MinWorkers * r.GPUsPerWorker}}
						d.Preemptions = append(d.Preemptions, sched.Preemption{JobID: r.ID, Mode: sched.SuspendBoundary, For: j.ID, Reason: "Shrink", Resize: keep})
						d.Reservations = append(d.Reservations, sched.Reservation{JobID: j.ID, Placement: []sched.Slot{{Node: "node-0", Workers: j.Workers, GPUs: j.GPUs()}}})
						break
					}
				}
				waiting = true
			}
		}
		if waiting || len(d.Starts) > 0 {
			return d
		}
		for _, r := range running {
			if w := want[r.ID]; r.Elastic() && r.Workers < w && s.Nodes[0].Free() >= (w-r.Workers)*r.GPUsPerWorker {
				grown := []sched.Slot{{Node: "node-0", Workers: w, GPUs: w * r.GPUsPerWorker}}
				d.Preemptions = append(d.Preemptions, sched.Preemption{JobID: r.ID, Mode: sched.SuspendBoundary, Reason: "Grow", Resize: grown})
			}
		}
		return d
	}}
}

// TestEngineResize follows an elastic job by hand through a shrink and a grow, with
// Serial 0.5: at half size it progresses at 1 / (0.5 + 0.5 x 2) = 2/3 of its speed.
//
// e (4 workers of 1 GPU, 100 s in 10 epochs, elastic 2..8) starts at 0 and runs from 15.
// q (2 GPUs, 30 s) arrives at 37: e runs on to its boundary at progress 30 (t=45), writes 2
// s and restarts on 2 workers at 47 (resume 16 s: runs from 63 at rate 2/3); q starts on
// the 2 GPUs given back at 47 and ends at 92. Nothing waits: e grows back, runs on to its
// boundary at progress 50 (63 + 20 / (2/3) = 93), writes 2 s, restarts on 4 workers at 95,
// runs from 111 and ends at 161.
func TestEngineResize(t *testing.T) {
	cfg := handConfig()
	cfg.Physics.Serial = 0.5
	cfg.Elastic.Share = 1 // bounds 2..4
	jobs := []traces.Job{
		simtest.MakeTraceJob("e").Gang(4, 1).Duration(100 * s).Epochs(10).Checkpoint(2e9).Obj(),
		simtest.MakeTraceJob("q").Gang(1, 1).Duration(30 * s).Submit(37 * s).Obj(),
	}
	jobs[1].GPUs, jobs[1].GPUsPerWorker = 2, 2
	r := run(t, simtest.Cluster(1, 4), jobs, resizer(map[string]int32{"e": 4}), cfg)
	want := []rec{
		{ID: "e", Start: 0, Finish: 161, Held: 161, SuspendWait: 4, Resume: 32, StartOver: 15, Delay: 10 + 3},
		{ID: "q", Start: 47, Finish: 92, Held: 45, Wait: 10, StartOver: 15},
	}
	if diff := cmp.Diff(want, recs(r), cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	e := r.Jobs[0]
	if e.ID != "e" || e.Resizes != 2 || e.Preemptions != 0 {
		t.Errorf("e: %d resizes and %d preemptions, want 2 and 0", e.Resizes, e.Preemptions)
	}
	// GPU-time: 4 GPUs 0..47, 2 GPUs 47..92, 4 GPUs from the grow at 92 to 161.
	if got, want := e.GPUTime.Seconds(), 4*47.0+2*45+4*69; got != want {
		t.Errorf("e held %v GPU-seconds, want %v", got, want)
	}
}

// An elastic job that runs below its requested size takes longer by Amdahl's law, and
// above it less; the accounting check (Config.Check) holds either way.
func TestEngineElasticSpeed(t *testing.T) {
	for _, tc := range []struct {
		gpus int32
		want float64 // finish, s
	}{
		{2, 190}, // 100 x (0.1 + 0.9 x 4/2)
		{4, 100},
		{8, 55}, // 100 x (0.1 + 0.9 x 4/8)
	} {
		cfg := handConfig()
		cfg.Physics.Ideal = true
		cfg.Elastic.Share, cfg.Elastic.Grow = 1, 2
		jobs := []traces.Job{simtest.MakeTraceJob("e").Gang(4, 1).Duration(100 * s).Epochs(10).Obj()}
		start := &simtest.Func{PolicyName: "test-sized", F: func(s *sched.Snapshot) sched.Decisions {
			for _, j := range s.Jobs {
				if j.Phase == sched.Queued {
					return sched.Decisions{Starts: []sched.Start{{JobID: j.ID, Placement: []sched.Slot{{Node: "node-0", Workers: tc.gpus, GPUs: tc.gpus}}}}}
				}
			}
			return sched.Decisions{}
		}}
		r := run(t, simtest.Cluster(1, 8), jobs, start, cfg)
		if got := r.Jobs[0].Finish.Seconds(); got < tc.want-1e-6 || got > tc.want+1e-6 {
			t.Errorf("on %d workers: finished at %v s, want %v", tc.gpus, got, tc.want)
		}
	}
}

// Elastic bounds come from the share: half to Grow times the request, one worker per GPU for a
// one-worker job whose shape the trace did not give; jobs of one GPU stay rigid.
func TestNewJobElastic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Elastic.Share, cfg.Elastic.Grow = 1, 2
	mk := func(gpus, workers int32, synth bool) *job {
		tj := simtest.MakeTraceJob("j").Gang(workers, gpus/workers).Obj()
		if synth {
			tj.Synthesized |= traces.FieldSet(traces.FieldWorkers)
		}
		return newJob(&tj, &cfg, 8)
	}
	for name, tc := range map[string]struct {
		j                    *job
		workers, per, lo, hi int32
	}{
		"one GPU stays rigid":         {mk(1, 1, true), 1, 1, 0, 0},
		"given shape 2x4":             {mk(8, 2, false), 2, 4, 1, 4},
		"given shape 1x8 stays one":   {mk(8, 1, false), 1, 8, 0, 0},
		"synthesized 1x8 per GPU":     {mk(8, 1, true), 8, 1, 4, 16},
		"odd sizes round the minimum": {mk(3, 3, false), 3, 1, 2, 6},
	} {
		s := tc.j.s
		if s.Workers != tc.workers || s.GPUsPerWorker != tc.per || s.MinWorkers != tc.lo || s.MaxWorkers != tc.hi {
			t.Errorf("%s: %dx%d elastic %d..%d, want %dx%d elastic %d..%d", name, s.Workers, s.GPUsPerWorker, s.MinWorkers, s.MaxWorkers, tc.workers, tc.per, tc.lo, tc.hi)
		}
	}
	cfg.Elastic.Share = 0.3
	n := 0
	for i := range 1000 {
		if chosen(string(rune('a'+i%26))+string(rune(i)), cfg.Seed, 0.3) {
			n++
		}
	}
	if n < 250 || n > 350 {
		t.Errorf("share 0.3 chose %d of 1000 jobs", n)
	}
}
