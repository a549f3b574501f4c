package replay

import (
	"context"
	"fmt"
	"strconv"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/traces"
)

// KindTrainJob submits trace jobs as Kubeflow Trainer v2 TrainJobs (the testbed runs the
// Trainer and JobSet: cluster.Options.Trainer).
const KindTrainJob = "trainjob"

// BuildTrainJob makes the TrainJob for a trace job: spec.trainer.numNodes nodes of
// GPUsPerWorker GPUs each (the gang), pinned to the job's GPU model by a pod-spec override of
// the node job, with the same queue, hints and labels as BuildJob, on the TrainingRuntime of
// the same name (TrainingRuntimeFor), which Run creates first. A TrainJob has no pod template:
// the runtime's carries the testbed agent's epoch time. The trace priority is not carried: the
// operator reads a priority class from pod templates, which a TrainJob has none of.
func BuildTrainJob(j traces.Job, name, ns, replay string) (*unstructured.Unstructured, error) {
	pj, err := BuildJob(j, name, ns, replay)
	if err != nil {
		return nil, err
	}
	master := pj.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template
	ann := map[string]string{AnnotationSimEpochTime: master.Annotations[AnnotationSimEpochTime]}
	for k, v := range pj.Annotations {
		ann[k] = v
	}
	spec := map[string]any{
		"runtimeRef": map[string]any{"name": name, "kind": trainjob.TrainingRuntimeKind},
		"trainer": map[string]any{
			"numNodes":         int64(j.Workers),
			"resourcesPerNode": map[string]any{"limits": map[string]any{cluster.GPUResource.String(): strconv.Itoa(int(j.GPUsPerWorker))}},
		},
	}
	if sel := master.Spec.NodeSelector; len(sel) > 0 {
		s := map[string]any{}
		for k, v := range sel {
			s[k] = v
		}
		spec["podSpecOverrides"] = []any{map[string]any{"targetJobs": []any{map[string]any{"name": trainjob.TrainJobNodePodSet}}, "nodeSelector": s}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(trainjob.GVK)
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(pj.Labels)
	u.SetAnnotations(ann)
	return u, nil
}

// TrainingRuntimeFor makes the TrainingRuntime a TrainJob of BuildTrainJob runs on: the
// Trainer's torch ML policy and one replicated job "node", the trainer step, whose pod
// template carries the job's hints and true epoch time for the testbed agent, and the
// training-operator's job-name label, by which the agent names a pod's job.
func TrainingRuntimeFor(tj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ann := map[string]string{}
	for _, k := range []string{AnnotationSimEpochTime, pickymanv1.AnnotationEpochs, pickymanv1.AnnotationDatasetBytes, pickymanv1.AnnotationCheckpointBytes} {
		if v, ok := tj.GetAnnotations()[k]; ok {
			ann[k] = v
		}
	}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: ann, Labels: map[string]string{kftraining.JobNameLabel: tj.GetName()}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "pickyman.dev/replay:latest"}}},
	}
	podTemplate, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tpl)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"mlPolicy": map[string]any{"torch": map[string]any{"numProcPerNode": "auto"}},
		"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": trainjob.TrainJobNodePodSet,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
				"spec":     map[string]any{"template": podTemplate},
			},
		}}}},
	}}}
	u.SetGroupVersionKind(trainjob.GVK.GroupVersion().WithKind(trainjob.TrainingRuntimeKind))
	u.SetName(tj.GetName())
	u.SetNamespace(tj.GetNamespace())
	u.SetLabels(map[string]string{LabelReplay: tj.GetLabels()[LabelReplay]})
	return u, nil
}

// createTrainingRuntimes creates the TrainingRuntime of every TrainJob of built (existing ones
// are kept: a replay's runtime is a function of its job).
func createTrainingRuntimes(ctx context.Context, c client.Client, built []client.Object) error {
	for _, obj := range built {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GroupVersionKind() != trainjob.GVK {
			continue
		}
		rt, err := TrainingRuntimeFor(u)
		if err != nil {
			return err
		}
		if err := c.Create(ctx, rt); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("TrainingRuntime %s/%s: %w", rt.GetNamespace(), rt.GetName(), err)
		}
	}
	return nil
}
