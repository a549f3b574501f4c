package testing

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TrainingRuntimeWrapper builds a Kubeflow Trainer v2 ClusterTrainingRuntime or
// TrainingRuntime (trainer.kubeflow.org/v1alpha1) as an unstructured object, in the shape of
// the Trainer's torch runtime: an ML policy and one replicated job "node", the trainer step,
// whose container "node" runs the training.
type TrainingRuntimeWrapper struct{ unstructured.Unstructured }

// MakeClusterTrainingRuntime starts a ClusterTrainingRuntime with a torch ML policy and a
// node job without a number of nodes or resources.
func MakeClusterTrainingRuntime(name string) *TrainingRuntimeWrapper {
	w := &TrainingRuntimeWrapper{unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "ClusterTrainingRuntime",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"mlPolicy": map[string]any{"torch": map[string]any{"numProcPerNode": "auto"}},
			"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{
				map[string]any{
					"name": "node",
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
						"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
							"containers": []any{map[string]any{"name": "node", "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}},
						}}},
					},
				},
			}}},
		},
	}}}
	return w
}

// MakeTrainingRuntime starts a namespaced TrainingRuntime, otherwise as
// MakeClusterTrainingRuntime.
func MakeTrainingRuntime(name, ns string) *TrainingRuntimeWrapper {
	w := MakeClusterTrainingRuntime(name)
	w.SetKind("TrainingRuntime")
	w.SetNamespace(ns)
	return w
}

// Obj returns the runtime.
func (w *TrainingRuntimeWrapper) Obj() *unstructured.Unstructured { return w.DeepCopy() }

func (w *TrainingRuntimeWrapper) nodeJob() map[string]any {
	jobs, _, _ := unstructured.NestedFieldNoCopy(w.Object, "spec", "template", "spec", "replicatedJobs")
	return jobs.([]any)[0].(map[string]any)
}

// NumNodes sets spec.mlPolicy.numNodes.
func (w *TrainingRuntimeWrapper) NumNodes(n int64) *TrainingRuntimeWrapper {
	w.Object["spec"].(map[string]any)["mlPolicy"].(map[string]any)["numNodes"] = n
	return w
}

// NoMLPolicy removes spec.mlPolicy: the node job's parallelism is then its number of nodes.
func (w *TrainingRuntimeWrapper) NoMLPolicy() *TrainingRuntimeWrapper {
	delete(w.Object["spec"].(map[string]any), "mlPolicy")
	return w
}

// Parallelism sets the node job's parallelism.
func (w *TrainingRuntimeWrapper) Parallelism(n int64) *TrainingRuntimeWrapper {
	w.nodeJob()["template"].(map[string]any)["spec"].(map[string]any)["parallelism"] = n
	return w
}

// GPUs sets a limit of gpus nvidia.com/gpu on the node container.
func (w *TrainingRuntimeWrapper) GPUs(gpus int64) *TrainingRuntimeWrapper {
	spec := w.nodeJob()["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	c["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": strconv.FormatInt(gpus, 10)}}
	return w
}
