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
	"github.com/pickyman/pickyman/testbed/physics"
)

// AnnotationEpochTime is the true epoch time of the job at its allocation (a Go duration in
// trace time). Only the testbed knows it: the trace replay driver puts it on the job's pod
// templates, next to v1alpha1.AnnotationEpochs, AnnotationDatasetBytes and
// AnnotationCheckpointBytes.
const AnnotationEpochTime = "pickyman.dev/sim-epoch-time"

// LabelJobName is the label the training-operator puts on a job's pods.
const LabelJobName = "training.kubeflow.org/job-name"

// Physics is the testbed's cost model, the simulator's (testbed/physics).
type Physics = physics.Physics

// DefaultPhysics returns the simulator's defaults.
func DefaultPhysics() Physics { return physics.Default() }

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
