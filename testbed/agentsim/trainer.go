package agentsim

import (
	"context"
	"fmt"
	"time"

	"github.com/pickyman/pickyman/agent/pkg/api"
	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/overhead"
)

type phase int

const (
	starting phase = iota // container start, checkpoint load, warm-up
	training              // in an epoch
	writing               // writing the checkpoint of a boundary suspend
	stopped               // acknowledged a suspend; waits for the pod to be deleted
	complete              // all epochs done
)

// trainer is one simulated training process (rank 0 of a one-rank pod).
type trainer struct {
	pod api.Pod
	// clusterMember marks a pod of a long-lived cluster (a RayCluster's worker): it keeps
	// running after its last epoch instead of completing.
	clusterMember bool
	// resumeLatest marks a pod that starts again from its newest checkpoint by itself
	// (AnnotationResumeLatest).
	resumeLatest bool
	spec         Spec
	node         string
	gpus         []int
	caller       api.Caller
	noise        noise

	phase      phase
	epoch      int32     // epoch in progress (training) or next
	epochStart time.Time // start of the epoch in progress
	epochLen   time.Duration
	until      time.Time // end of starting or writing
	lastCkpt   agentv1alpha1.ResumePoint
	req        *agentv1alpha1.CheckpointRequest
	bytesDone  int64 // storage bytes read in finished epochs
}

// newTrainer registers a simulated process for pod and schedules its start.
func newTrainer(reg *api.Registry, pod api.Pod, spec Spec, node string, caller api.Caller, n noise, ph Physics, scale float64, now time.Time) (*trainer, error) {
	t := &trainer{pod: pod, spec: spec, node: node, caller: caller, noise: n, lastCkpt: pod.Resume}
	rp, err := reg.Register(caller, pod.Key(), 0, 1)
	if err != nil {
		return nil, err
	}
	t.epoch = rp.Epoch
	start := scaled(ph.ContainerStart, n.start, scale) + scaled(ph.WarmUp, n.warm, scale)
	if rp.Epoch > 0 {
		start += scaled(overhead.Transfer(spec.CheckpointBytes, ph.ReadBandwidth, 1), n.load, scale)
	}
	t.until = now.Add(start)
	// An elastic job's epoch time follows its size (Physics.EpochTime).
	t.epochLen = scaled(ph.EpochTime(spec.EpochTime, rp.WorldSize, rp.ReferenceWorldSize), 1, scale)
	return t, nil
}

// step advances the trainer to now; it returns true when the pod completed all its epochs
// at this step.
func (t *trainer) step(ctx context.Context, reg *api.Registry, ph Physics, scale float64, now time.Time) (bool, error) {
	for {
		if t.phase == stopped || t.phase == complete {
			return false, nil
		}
		if t.req == nil {
			req, err := reg.Poll(ctx, t.caller, 0)
			if err != nil {
				return false, err
			}
			t.req = req
		}
		if t.req != nil && (t.req.Mode == agentv1alpha1.ModeNow && t.phase != writing || t.phase == starting) {
			// Stop at once: resume from the newest checkpoint.
			t.phase = stopped
			return false, reg.CheckpointDone(t.caller, t.req.ID, t.lastCkpt.Epoch, t.lastCkpt.Path, 0, 0)
		}
		switch t.phase {
		case starting:
			if now.Before(t.until) {
				return false, nil
			}
			if err := t.begin(reg, t.until); err != nil {
				return false, err
			}
		case training:
			end := t.epochStart.Add(t.epochLen)
			if now.Before(end) {
				return false, nil
			}
			if err := reg.EpochEnd(t.caller, t.epoch, 0, t.epochBytes()); err != nil {
				return false, err
			}
			t.bytesDone += t.epochBytes()
			t.epoch++
			if ph.CheckpointPeriod > 0 && t.epoch%ph.CheckpointPeriod == 0 {
				t.lastCkpt = agentv1alpha1.ResumePoint{Epoch: t.epoch, Path: t.ckptPath(t.epoch)}
			}
			if t.epoch >= t.spec.Epochs {
				t.phase = complete
				return true, nil
			}
			if t.req != nil { // a boundary request: write, then stop
				t.phase = writing
				t.until = end.Add(scaled(overhead.Transfer(t.spec.CheckpointBytes, ph.WriteBandwidth, 1), t.noise.write, scale))
				continue
			}
			if err := t.begin(reg, end); err != nil {
				return false, err
			}
		case writing:
			if now.Before(t.until) {
				return false, nil
			}
			t.phase = stopped
			secs := scaled(overhead.Transfer(t.spec.CheckpointBytes, ph.WriteBandwidth, 1), t.noise.write, scale).Seconds()
			return false, reg.CheckpointDone(t.caller, t.req.ID, t.epoch, t.ckptPath(t.epoch), t.spec.CheckpointBytes, secs)
		}
	}
}

func (t *trainer) begin(reg *api.Registry, at time.Time) error {
	if err := reg.EpochBegin(t.caller, t.epoch); err != nil {
		return err
	}
	t.phase, t.epochStart = training, at
	return nil
}

// epochBytes is the storage traffic of one epoch: the dataset, with the job's noise.
func (t *trainer) epochBytes() int64 {
	return int64(float64(t.spec.DatasetBytes) * t.noise.traffic)
}

// readBytes is the counter of bytes received at now.
func (t *trainer) readBytes(now time.Time) int64 {
	n := t.bytesDone
	if t.phase == training && t.epochLen > 0 {
		f := min(max(now.Sub(t.epochStart).Seconds()/t.epochLen.Seconds(), 0), 1)
		n += int64(f * float64(t.epochBytes()))
	}
	return n
}

func (t *trainer) ckptPath(epoch int32) string {
	return fmt.Sprintf("sim://%s/epoch-%d", t.spec.Job, epoch)
}
