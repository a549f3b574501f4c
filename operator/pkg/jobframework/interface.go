package jobframework

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
)

// GenericJob is a training job of some kind, wrapped by its adapter. Methods that change the
// job change the wrapped object only; the caller writes it to the API server.
type GenericJob interface {
	// Object is the wrapped API object.
	Object() client.Object
	// GVK is the kind of the job.
	GVK() schema.GroupVersionKind
	// PodSets is the gang: one entry per replica type, in a stable order (the order the
	// operator assigns placement slots in). It fails, naming the field, when the job has no
	// usable gang (no GPU limit, different GPU counts per replica type).
	PodSets(gpuResource, gpuProductLabel string) ([]pickymanv1.PodSet, error)
	// PodTemplates returns the job's pod templates, keyed by pod-set name, for mutation.
	PodTemplates() map[string]*corev1.PodTemplateSpec
	// IsSuspended reports whether the job is suspended.
	IsSuspended() bool
	// Suspend sets the job's suspend field.
	Suspend(suspended bool)
	// Finished reports whether the job has ended, and whether it succeeded.
	Finished() (finished, succeeded bool)
	// PodSetOf maps a pod of the job to its pod-set name and index within the pod set. A
	// kind whose pods carry no index returns AnyIndex: the binder gives such a pod any slot
	// of its pod set that no other pod of the job holds.
	PodSetOf(pod *corev1.Pod) (podSet string, index int32, ok bool)
	// PodSelector selects the job's pods in its namespace.
	PodSelector() map[string]string
}

// Elastic is an optional capability: a kind whose gang may change size. The operator reads
// the bounds into the Allocation and sets the count when it admits the job at another size.
type Elastic interface {
	// ElasticBounds returns the pod set that may change size and its bounds; ok is false
	// for a rigid job. It fails, naming the field, when the bounds are unusable.
	ElasticBounds() (podSet string, lo, hi int32, ok bool, err error)
	// SetCount sets the number of pods of a pod set.
	SetCount(podSet string, n int32)
}

// AnyIndex is the index PodSetOf returns for a pod of a kind whose pods carry no index.
const AnyIndex int32 = -1

// PodSetPaths is an optional capability: a kind that knows the field path of each pod set
// in its spec, so that validation errors name the field. Without it errors name "spec".
type PodSetPaths interface {
	PodSetPath(podSet string) *field.Path
}

// PodSetPath returns the field path of a pod set of job, or spec when the kind does not know.
func PodSetPath(job GenericJob, podSet string) *field.Path {
	if p, ok := job.(PodSetPaths); ok {
		return p.PodSetPath(podSet)
	}
	return field.NewPath("spec")
}

// GPULimitPaths is an optional capability: a kind whose pod sets' GPU limits are not in a pod
// template (a TrainJob's is in spec.trainer.resourcesPerNode). Without it the path is the pod
// set's template's containers' limit.
type GPULimitPaths interface {
	GPULimitPath(podSet, gpuResource string) *field.Path
}

// GPULimitPath returns the field path of the GPU limit of a pod set of job.
func GPULimitPath(job GenericJob, podSet, gpuResource string) *field.Path {
	if p, ok := job.(GPULimitPaths); ok {
		return p.GPULimitPath(podSet, gpuResource)
	}
	return PodSetPath(job, podSet).Child("template", "spec", "containers").Key("resources.limits").Key(gpuResource)
}

// Integration describes a job kind the operator manages.
type Integration struct {
	GVK schema.GroupVersionKind
	// NewObject returns an empty object of the kind; NewList an empty list.
	NewObject func() client.Object
	NewList   func() client.ObjectList
	// Wrap adapts an object of the kind; it returns nil for an object of another kind.
	Wrap func(obj client.Object) GenericJob
}

// Managed reports whether a job is managed by PickyMan: it names a queue.
func Managed(obj client.Object) bool {
	_, ok := obj.GetLabels()[pickymanv1.LabelQueue]
	return ok
}

// AllocationName is the name of the Allocation of a job of a kind: the lower-case kind and
// the job name, so that jobs of different kinds never share an Allocation.
func AllocationName(kind, job string) string {
	return fmt.Sprintf("%s-%s", lowerASCII(kind), job)
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Hints are what a job's labels and annotations tell about its training.
type Hints struct {
	Model           string
	Epochs          int32
	DatasetBytes    int64
	CheckpointBytes int64
	Estimate        time.Duration
}

// ReadHints parses the well-known labels and annotations of a job. A malformed value is an
// error naming the annotation.
func ReadHints(obj client.Object) (Hints, error) {
	h := Hints{Model: obj.GetLabels()[pickymanv1.LabelModel]}
	a := obj.GetAnnotations()
	var errs []error
	if v, ok := a[pickymanv1.AnnotationEpochs]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q: want a non-negative integer", pickymanv1.AnnotationEpochs, v))
		}
		h.Epochs = int32(n)
	}
	for key, dst := range map[string]*int64{
		pickymanv1.AnnotationDatasetBytes:    &h.DatasetBytes,
		pickymanv1.AnnotationCheckpointBytes: &h.CheckpointBytes,
	} {
		v, ok := a[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q: want a non-negative integer", key, v))
		}
		*dst = n
	}
	if v, ok := a[pickymanv1.AnnotationEstimate]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("annotation %s=%q: want a duration such as 2h30m", pickymanv1.AnnotationEstimate, v))
		}
		h.Estimate = d
	}
	return h, errors.Join(errs...)
}

// GangShape reduces pod sets to the scheduling core's gang: workers of equal GPU count. It
// fails when pod sets ask for different GPU counts or GPU models.
func GangShape(sets []pickymanv1.PodSet) (workers, gpusPerWorker int32, gpuModel string, err error) {
	for i, s := range sets {
		if i == 0 {
			gpusPerWorker, gpuModel = s.GPUsPerPod, s.GPUModel
		}
		if s.GPUsPerPod != gpusPerWorker {
			return 0, 0, "", fmt.Errorf("pod set %s asks for %d GPUs per pod, %s for %d: a gang needs one GPU count", s.Name, s.GPUsPerPod, sets[0].Name, gpusPerWorker)
		}
		if s.GPUModel != gpuModel {
			return 0, 0, "", fmt.Errorf("pod set %s asks for GPU model %q, %s for %q: a gang needs one GPU model", s.Name, s.GPUModel, sets[0].Name, gpuModel)
		}
		workers += s.Count
	}
	return workers, gpusPerWorker, gpuModel, nil
}

// References is an optional capability: a kind whose gang is partly set by objects the job
// refers to (a TrainJob's training runtime sets its number of nodes and their GPU limit unless
// the TrainJob sets them). ResolveReferences reads those objects through r; PodSets then takes
// from them what the job leaves out. A referred object that does not exist is no error here:
// PodSets names it when it needs it.
type References interface {
	ResolveReferences(ctx context.Context, r client.Reader) error
}

// ResolveReferences reads what job refers to, for a kind with References; it does nothing for
// any other kind. Callers resolve a job before they read its PodSets.
func ResolveReferences(ctx context.Context, r client.Reader, job GenericJob) error {
	if j, ok := job.(References); ok {
		return j.ResolveReferences(ctx, r)
	}
	return nil
}
