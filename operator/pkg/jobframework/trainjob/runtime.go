package trainjob

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator reads the training runtime a TrainJob refers to, for the gang the TrainJob
// leaves to it.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch

// The runtime kinds a TrainJob refers to (spec.runtimeRef, Trainer v2.0: kind defaults to
// ClusterTrainingRuntime, apiGroup to trainer.kubeflow.org), the label by which the runtime
// marks its trainer's replicated job, and the trainer's container.
const (
	ClusterTrainingRuntimeKind = "ClusterTrainingRuntime"
	TrainingRuntimeKind        = "TrainingRuntime"
	ancestorLabel              = "trainer.kubeflow.org/trainjob-ancestor-step"
	ancestorTrainer            = "trainer"
	trainerContainer           = "node"
)

var runtimeRefPath = field.NewPath("spec", "runtimeRef")

// runtimeGang is what a training runtime says of the trainer's node job: its number of nodes
// and the node container's limits. found is false when the runtime does not exist.
type runtimeGang struct {
	kind, name string
	found      bool
	numNodes   int32
	limits     corev1.ResourceList
}

// runtimeSpec mirrors the fields of a (Cluster)TrainingRuntime's spec that PickyMan reads.
type runtimeSpec struct {
	MLPolicy *struct {
		NumNodes *int32 `json:"numNodes,omitempty"`
	} `json:"mlPolicy,omitempty"`
	Template struct {
		Spec struct {
			ReplicatedJobs []struct {
				Name     string `json:"name"`
				Template struct {
					Metadata struct {
						Labels map[string]string `json:"labels,omitempty"`
					} `json:"metadata"`
					Spec struct {
						Parallelism *int32                 `json:"parallelism,omitempty"`
						Template    corev1.PodTemplateSpec `json:"template"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"replicatedJobs"`
		} `json:"spec"`
	} `json:"template"`
}

// ResolveReferences reads the training runtime of spec.runtimeRef. Its node job is the
// replicated job "node" (TrainJobNodePodSet); the number of nodes is the runtime's
// mlPolicy.numNodes (1 when unset) if the job is the runtime's trainer step and the runtime has
// an ML policy, else the job's parallelism (1 when unset), as the Trainer v2.0 computes it
// (pkg/runtime/core/trainingruntime.go); the GPU limit is the limit of the job's container
// "node", which the Trainer replaces by spec.trainer.resourcesPerNode
// (pkg/runtime/framework/plugins/jobset/builder.go). A runtime that does not exist is
// remembered as such; PodSets names it if it needs it.
func (j *Job) ResolveReferences(ctx context.Context, r client.Reader) error {
	var ref struct {
		Name     string  `json:"name"`
		APIGroup *string `json:"apiGroup,omitempty"`
		Kind     *string `json:"kind,omitempty"`
	}
	if err := j.decode(&ref, "spec", "runtimeRef"); err != nil {
		return err
	}
	if ref.Name == "" || (ref.APIGroup != nil && *ref.APIGroup != GVK.Group) {
		j.runtime = nil
		return nil
	}
	g := &runtimeGang{kind: ClusterTrainingRuntimeKind, name: ref.Name}
	key := types.NamespacedName{Name: ref.Name}
	if ref.Kind != nil && *ref.Kind != "" {
		g.kind = *ref.Kind
	}
	switch g.kind {
	case ClusterTrainingRuntimeKind:
	case TrainingRuntimeKind:
		key.Namespace = j.obj.GetNamespace()
	default:
		j.runtime = nil
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK.GroupVersion().WithKind(g.kind))
	err := r.Get(ctx, key, u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		// No such runtime, or no runtime CRD at all.
		j.runtime = g
		return nil
	case err != nil:
		return fmt.Errorf("%s %s: %w", g.kind, key, err)
	}
	g.found = true
	var spec runtimeSpec
	if err := (&Job{obj: u}).decode(&spec, "spec"); err != nil {
		return fmt.Errorf("%s %s: %w", g.kind, key, err)
	}
	for _, rj := range spec.Template.Spec.ReplicatedJobs {
		if rj.Name != TrainJobNodePodSet {
			continue
		}
		g.numNodes = 1
		if p := rj.Template.Spec.Parallelism; p != nil {
			g.numNodes = *p
		}
		if rj.Template.Metadata.Labels[ancestorLabel] == ancestorTrainer && spec.MLPolicy != nil {
			g.numNodes = 1
			if n := spec.MLPolicy.NumNodes; n != nil {
				g.numNodes = *n
			}
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name == trainerContainer {
				g.limits = c.Resources.Limits
			}
		}
	}
	j.runtime = g
	return nil
}

// fromRuntime returns the resolved runtime for a field the TrainJob does not set (path, the
// field's path), or an error naming path, or spec.runtimeRef.name when the runtime does not
// exist.
func (j *Job) fromRuntime(path *field.Path) (*runtimeGang, *field.Error) {
	switch g := j.runtime; {
	case g == nil:
		return nil, field.Required(path,
			"a PickyMan TrainJob sets it unless its spec.runtimeRef names a ClusterTrainingRuntime or TrainingRuntime of trainer.kubeflow.org")
	case !g.found:
		return nil, field.NotFound(runtimeRefPath.Child("name"), fmt.Sprintf("%s %s (it sets %s for a TrainJob that does not)", g.kind, g.name, path))
	default:
		return g, nil
	}
}
