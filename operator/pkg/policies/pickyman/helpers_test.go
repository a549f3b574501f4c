package pickyman

import (
	"fmt"
	"math/rand/v2"
	"time"

	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/sched"
)

// now is the time of the table tests' snapshots.
var now = utiltesting.At(100 * time.Hour)

// epochJob makes a running job of one worker with gpus GPUs on node whose epoch time is
// observed: epochs epochs of epoch, done of them finished, into the current one.
func epochJob(id, node string, gpus int32, epoch time.Duration, epochs, done int32, into time.Duration) *utiltesting.JobWrapper {
	w := utiltesting.MakeJob(id).GPUs(1, gpus).Model("resnet50").Started(now.Add(-24 * time.Hour)).Running(node)
	w.Epochs, w.EpochsDone, w.EpochTime, w.SinceCheckpoint = epochs, done, epoch, into
	w.WarmUntil = w.LastStart.Add(time.Minute)
	w.CheckpointBytes = 1e9
	w.Job.Attained = time.Duration(gpus) * (time.Duration(done)*epoch + into)
	return w
}

// waitingJob makes a queued job with a declared run time.
func waitingJob(id string, workers, per int32, run time.Duration) *utiltesting.JobWrapper {
	w := utiltesting.MakeJob(id).GPUs(workers, per).Model("bert").Submit(now.Add(-2 * time.Hour))
	w.Epochs = 10
	w.UserEstimate = run
	return w
}

// enrich gives the jobs of a random snapshot what the predictor and overhead model read:
// epochs and progress (from the oracle times), checkpoint sizes and user estimates for
// some queued jobs.
func enrich(s *sched.Snapshot, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for _, j := range s.Jobs {
		j.Model = fmt.Sprintf("m%d", r.IntN(5))
		j.Epochs = 1 + int32(r.IntN(50))
		j.CheckpointBytes = int64(r.IntN(20)) << 30
		svc := j.Oracle.Service
		if svc <= 0 {
			svc = time.Hour
		}
		epoch := svc / time.Duration(j.Epochs)
		if j.Phase == sched.Queued {
			if r.IntN(2) == 0 {
				j.UserEstimate = svc
			}
			continue
		}
		done := svc - j.Oracle.Remaining
		if epoch > 0 {
			j.EpochsDone = int32(done / epoch)
			j.SinceCheckpoint = done - time.Duration(j.EpochsDone)*epoch
		}
		if r.IntN(3) > 0 {
			j.EpochTime = epoch
		}
		j.Preemptions = int32(r.IntN(6))
		j.WarmUntil = j.LastStart.Add(time.Minute)
	}
}
