package agentsim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pickyman/pickyman/api/v1alpha1"
)

// AnnotationEpochTime is the true epoch time of the job at its allocation (a Go duration in
// trace time). Only the testbed knows it: the trace replay driver puts it on the job's pod
// templates, next to v1alpha1.AnnotationEpochs, AnnotationDatasetBytes and
// AnnotationCheckpointBytes.
const AnnotationEpochTime = "pickyman.dev/sim-epoch-time"

// LabelJobName is the label the training-operator puts on a job's pods.
const LabelJobName = "training.kubeflow.org/job-name"

// Physics is the cost model of brief section 3, with the defaults of the simulator
// (testbed/sim.DefaultPhysics; a test keeps them equal).
type Physics struct {
	ContainerStart time.Duration
	WarmUp         time.Duration
	WriteBandwidth float64 // bytes/s
	ReadBandwidth  float64 // bytes/s
	// CheckpointPeriod: a periodic checkpoint every this many epochs (written
	// asynchronously, at no cost); a suspend-now resumes from the newest one.
	CheckpointPeriod int32
	NoiseSigma       float64
	// Serial is the serial fraction of an elastic job's epoch time (Amdahl's law, as the
	// simulator's Physics.Serial); see EpochTime.
	Serial float64
}

// DefaultPhysics returns the simulator's defaults.
func DefaultPhysics() Physics {
	return Physics{ContainerStart: 20 * time.Second, WarmUp: 30 * time.Second, WriteBandwidth: 500e6,
		ReadBandwidth: 1e9, CheckpointPeriod: 1, NoiseSigma: 0.1, Serial: 0.1}
}

// EpochTime is the epoch time of a job on worldSize workers, given its epoch time epoch at
// reference workers (the pod's sim-epoch-time annotation, at the size the job's
// pickyman.dev/elastic-reference annotation names, by default its maximum): Amdahl's law, the simulator's rule (testbed/sim speed),
//
//	epoch x (Serial + (1 - Serial) x reference / worldSize),
//
// so an elastic job that shrinks to half its reference size takes 1 + (1 - Serial) times as
// long per epoch (1.9x with Serial 0.1). The sizes are the resume point's WorldSize and
// ReferenceWorldSize; when either is 0 (a rigid job) or they are equal, epoch is unchanged.
func (ph Physics) EpochTime(epoch time.Duration, worldSize, reference int32) time.Duration {
	if worldSize <= 0 || reference <= 0 || worldSize == reference {
		return epoch
	}
	f := ph.Serial + (1-ph.Serial)*float64(reference)/float64(worldSize)
	return time.Duration(math.Round(float64(epoch) * f))
}

// Spec is what a simulated pod trains, from its annotations.
type Spec struct {
	Job             string
	Epochs          int32
	EpochTime       time.Duration // trace time
	DatasetBytes    int64
	CheckpointBytes int64
	GPUs            int
}

// SpecFromPod reads a pod's simulated job. Pods without the epoch-time annotation are not
// simulated.
func SpecFromPod(p *corev1.Pod) (Spec, error) {
	a := p.Annotations
	s := Spec{Job: p.Labels[LabelJobName]}
	if s.Job == "" {
		s.Job = p.Namespace + "/" + p.Name
	} else {
		s.Job = p.Namespace + "/" + s.Job
	}
	v, ok := a[AnnotationEpochTime]
	if !ok {
		return s, fmt.Errorf("pod %s/%s has no %s", p.Namespace, p.Name, AnnotationEpochTime)
	}
	var err error
	if s.EpochTime, err = time.ParseDuration(v); err != nil || s.EpochTime <= 0 {
		return s, fmt.Errorf("pod %s/%s: bad %s %q", p.Namespace, p.Name, AnnotationEpochTime, v)
	}
	epochs, err := strconv.ParseInt(a[v1alpha1.AnnotationEpochs], 10, 32)
	if err != nil || epochs < 1 {
		return s, fmt.Errorf("pod %s/%s: bad %s %q", p.Namespace, p.Name, v1alpha1.AnnotationEpochs, a[v1alpha1.AnnotationEpochs])
	}
	s.Epochs = int32(epochs)
	s.DatasetBytes, _ = strconv.ParseInt(a[v1alpha1.AnnotationDatasetBytes], 10, 64)
	s.CheckpointBytes, _ = strconv.ParseInt(a[v1alpha1.AnnotationCheckpointBytes], 10, 64)
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
			s.GPUs += int(q.Value())
		}
	}
	return s, nil
}

// noise holds a job's lognormal factors (median 1): the same for every pod of the job, so a
// gang stays in step.
type noise struct {
	start, warm, write, load, traffic float64
}

func jobNoise(seed int64, job string, sigma float64) noise {
	h := fnv.New64a()
	h.Write([]byte(job))
	r := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	f := func() float64 { return math.Exp(sigma * r.NormFloat64()) }
	return noise{start: f(), warm: f(), write: f(), load: f(), traffic: f()}
}

// scaled divides a trace-time duration by the time scale and multiplies it by a noise factor.
func scaled(d time.Duration, factor, scale float64) time.Duration {
	return time.Duration(float64(d) * factor / scale)
}

// transfer is the trace time to move bytes at bw.
func transfer(bytes int64, bw float64) time.Duration {
	if bytes <= 0 || bw <= 0 {
		return 0
	}
	return time.Duration(float64(bytes) / bw * float64(time.Second))
}
