package testing

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// RandomConfig sizes a random snapshot.
type RandomConfig struct {
	Nodes       int
	GPUsPerNode int32
	// Models are the GPU models nodes get, round robin; nil means one model "V100".
	Models []string
	// Running and Queued are how many jobs to make; running jobs are placed until
	// Running are placed or the next one does not fit.
	Running int
	Queued  int
	// Unschedulable is the fraction of nodes marked unschedulable.
	Unschedulable float64
	// Suspending is the fraction of running jobs turned Suspending (for a queued job with
	// a reservation, or for no one).
	Suspending float64
}

// SmallRandom is a configuration for property tests: a few nodes, several models, every
// phase and feature present.
func SmallRandom(r *rand.Rand) RandomConfig {
	return RandomConfig{
		Nodes:         1 + r.IntN(12),
		GPUsPerNode:   []int32{2, 4, 8}[r.IntN(3)],
		Models:        []string{"A100", "V100"}[:1+r.IntN(2)],
		Running:       r.IntN(30),
		Queued:        r.IntN(30),
		Unschedulable: 0.1,
		Suspending:    0.2,
	}
}

// RandomSnapshot makes a consistent snapshot from seed: nodes sorted by name, running jobs
// placed by gang placement, some suspending jobs with the reservations of the queued jobs
// they free GPUs for, queued jobs of varied shapes (a few of which never fit), priorities,
// oracle times, attained service and start times. The same seed gives the same snapshot.
func RandomSnapshot(seed uint64, cfg RandomConfig) *sched.Snapshot {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	now := At(100 * time.Hour)
	models := cfg.Models
	if len(models) == 0 {
		models = []string{"V100"}
	}
	s := &sched.Snapshot{Now: now}
	for i := 0; i < cfg.Nodes; i++ {
		s.Nodes = append(s.Nodes, sched.Node{
			Name:          fmt.Sprintf("n%04d", i),
			GPUModel:      models[i%len(models)],
			GPUs:          cfg.GPUsPerNode,
			Unschedulable: r.Float64() < cfg.Unschedulable,
		})
	}
	randDur := func(max time.Duration) time.Duration { return time.Duration(1 + r.Int64N(int64(max))) }
	newJob := func(id string, workers, per int32) *sched.Job {
		svc := randDur(20 * time.Hour)
		j := &sched.Job{
			ID: id, Workers: workers, GPUsPerWorker: per, Phase: sched.Queued,
			Priority: int32(r.IntN(4)),
			Submit:   now.Add(-randDur(50 * time.Hour)),
			Oracle:   sched.Oracle{Known: true, Service: svc, Remaining: svc},
		}
		if r.IntN(4) == 0 {
			j.GPUModel = models[r.IntN(len(models))]
		}
		return j
	}
	view := sched.NewView(s, nil)
	// Running jobs: small shapes, placed on schedulable nodes. The view only knows
	// schedulable capacity; jobs on nodes that later turn unschedulable are fine too.
	for i := 0; i < cfg.Running; i++ {
		w, g := smallShape(r, cfg.GPUsPerNode)
		j := newJob(fmt.Sprintf("r%05d", i), w, g)
		pl, ok := view.PlaceGang(j)
		if !ok {
			break
		}
		view.Take(pl)
		j.Phase, j.Placement = sched.Running, pl
		j.LastStart = now.Add(-randDur(10 * time.Hour))
		j.FirstStart = j.LastStart.Add(-randDur(time.Hour))
		j.Attained = time.Duration(j.GPUs()) * now.Sub(j.LastStart)
		j.Oracle.Remaining = randDur(j.Oracle.Service)
		s.Jobs = append(s.Jobs, j)
	}
	running := append([]*sched.Job(nil), s.Jobs...)
	var queued []*sched.Job
	for i := 0; i < cfg.Queued; i++ {
		w, g := queuedShape(r, cfg.GPUsPerNode, cfg.Nodes)
		j := newJob(fmt.Sprintf("q%05d", i), w, g)
		if r.IntN(5) == 0 { // preempted before: has run
			j.LastStart = now.Add(-randDur(20 * time.Hour))
			j.LastStop = j.LastStart.Add(randDur(time.Hour))
			j.Attained = time.Duration(j.GPUs()) * j.LastStop.Sub(j.LastStart)
			j.Oracle.Remaining = randDur(j.Oracle.Service)
		}
		queued = append(queued, j)
		s.Jobs = append(s.Jobs, j)
	}
	// Suspending jobs: some free GPUs for a queued job that holds a reservation.
	for _, q := range queued {
		if len(running) == 0 || r.Float64() >= cfg.Suspending {
			continue
		}
		r.Shuffle(len(running), func(a, b int) { running[a], running[b] = running[b], running[a] })
		victims, pl, ok := view.FindVictims(q, running)
		if !ok || len(victims) == 0 {
			continue
		}
		for _, v := range victims {
			v.Phase = sched.Suspending
			v.Suspend = &sched.SuspendState{Mode: sched.SuspendNow, For: q.ID, Decided: now, FreeAt: now.Add(time.Minute)}
		}
		q.Reserved = pl
		view.Reserve(q, pl, victims)
		running = without(running, victims)
	}
	for _, j := range running {
		if r.Float64() < cfg.Suspending/2 {
			j.Phase = sched.Suspending
			j.Suspend = &sched.SuspendState{Mode: sched.SuspendBoundary, Decided: now, FreeAt: now.Add(time.Hour)}
		}
	}
	at := make(map[string]int, len(s.Nodes))
	for i := range s.Nodes {
		at[s.Nodes[i].Name] = i
	}
	for _, j := range s.Jobs {
		if j.Phase == sched.Running || j.Phase == sched.Suspending {
			for _, sl := range j.Placement {
				s.Nodes[at[sl.Node]].Used += sl.GPUs
			}
		}
	}
	return s
}

func without(jobs, drop []*sched.Job) []*sched.Job {
	gone := make(map[*sched.Job]bool, len(drop))
	for _, d := range drop {
		gone[d] = true
	}
	out := jobs[:0]
	for _, j := range jobs {
		if !gone[j] {
			out = append(out, j)
		}
	}
	return out
}

// smallShape is the shape mix of running jobs: mostly one GPU.
func smallShape(r *rand.Rand, node int32) (int32, int32) {
	switch x := r.IntN(100); {
	case x < 90:
		return 1, 1
	case x < 97:
		return 1, min(2, node)
	default:
		return 1, min(4, node)
	}
}

// queuedShape is the shape mix of queued jobs, from one GPU to multi-node gangs, with a
// few that never fit the cluster.
func queuedShape(r *rand.Rand, node int32, nodes int) (int32, int32) {
	switch x := r.IntN(100); {
	case x < 50:
		return 1, 1
	case x < 65:
		return 1, min(2, node)
	case x < 75:
		return 2, min(2, node)
	case x < 85:
		return 1, node
	case x < 95:
		return 2 + int32(r.IntN(3)), node
	case x < 98:
		return int32(nodes + 1), node // never fits
	default:
		return 1, node + 1 // never fits
	}
}

// FitsBrute reports, by counting whole workers per node, whether j fits in the free GPUs
// (by node name) of the schedulable nodes of one GPU model. Property tests check the core's
// placement and victim search against it.
func FitsBrute(s *sched.Snapshot, free map[string]int32, j *sched.Job) bool {
	workers := map[string]int32{}
	for _, n := range s.Nodes {
		if n.Unschedulable || (j.GPUModel != "" && n.GPUModel != j.GPUModel) || free[n.Name] <= 0 {
			continue
		}
		workers[n.GPUModel] += free[n.Name] / j.GPUsPerWorker
	}
	for _, w := range workers {
		if w >= j.Workers {
			return true
		}
	}
	return false
}
