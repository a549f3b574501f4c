package testing

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
)

// TrainJobWrapper builds a Kubeflow Trainer v2 trainer.kubeflow.org/v1alpha1 TrainJob, as an
// unstructured object (the trainer's Go API is not a dependency of this module).
type TrainJobWrapper struct{ unstructured.Unstructured }

// MakeTrainJob starts a TrainJob in namespace ns, in queue "default", on the runtime
// torch-distributed, with an image and an environment variable for its trainer but no number
// of nodes and no resources.
func MakeTrainJob(name, ns string) *TrainJobWrapper {
	w := &TrainJobWrapper{unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata": map[string]any{
			"name": name, "namespace": ns,
			"labels": map[string]any{pickymanv1.LabelQueue: "default"},
		},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": "torch-distributed"},
			"trainer": map[string]any{
				"image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
				"env":   []any{map[string]any{"name": "EPOCHS", "value": "10"}},
			},
		},
	}}}
	return w
}

// Obj returns the job.
func (w *TrainJobWrapper) Obj() *unstructured.Unstructured { return w.DeepCopy() }

func (w *TrainJobWrapper) trainer() map[string]any {
	spec := w.Object["spec"].(map[string]any)
	t, ok := spec["trainer"].(map[string]any)
	if !ok {
		t = map[string]any{}
		spec["trainer"] = t
	}
	return t
}

// Nodes sets spec.trainer.numNodes.
func (w *TrainJobWrapper) Nodes(n int64) *TrainJobWrapper {
	w.trainer()["numNodes"] = n
	return w
}

// GPUs sets spec.trainer.resourcesPerNode: a limit of gpus nvidia.com/gpu and a CPU request
// (only the CPU request if gpus < 0).
func (w *TrainJobWrapper) GPUs(gpus int64) *TrainJobWrapper {
	r := map[string]any{"requests": map[string]any{"cpu": "4"}}
	if gpus >= 0 {
		r["limits"] = map[string]any{"nvidia.com/gpu": strconv.FormatInt(gpus, 10)}
	}
	w.trainer()["resourcesPerNode"] = r
	return w
}

// Override adds a spec.podSpecOverrides entry for the target jobs.
func (w *TrainJobWrapper) Override(o map[string]any, targets ...string) *TrainJobWrapper {
	spec := w.Object["spec"].(map[string]any)
	var ts []any
	for _, t := range targets {
		ts = append(ts, map[string]any{"name": t})
	}
	o["targetJobs"] = ts
	os, _ := spec["podSpecOverrides"].([]any)
	spec["podSpecOverrides"] = append(os, o)
	return w
}

// Runtime sets spec.runtimeRef: the runtime's name and kind ("" leaves the kind unset, which
// the Trainer defaults to ClusterTrainingRuntime).
func (w *TrainJobWrapper) Runtime(kind, name string) *TrainJobWrapper {
	ref := map[string]any{"name": name}
	if kind != "" {
		ref["kind"] = kind
	}
	w.Object["spec"].(map[string]any)["runtimeRef"] = ref
	return w
}

// GPUProduct selects the GPU model for the node job through a pod-spec override.
func (w *TrainJobWrapper) GPUProduct(label, product string) *TrainJobWrapper {
	return w.Override(map[string]any{"nodeSelector": map[string]any{label: product}}, "node")
}

// Queue sets the pickyman.dev/queue label; "" removes it.
func (w *TrainJobWrapper) Queue(q string) *TrainJobWrapper {
	labels := w.GetLabels()
	if q == "" {
		delete(labels, pickymanv1.LabelQueue)
	} else {
		labels[pickymanv1.LabelQueue] = q
	}
	w.SetLabels(labels)
	return w
}

// Annotation sets an annotation.
func (w *TrainJobWrapper) Annotation(k, v string) *TrainJobWrapper {
	a := w.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	w.SetAnnotations(a)
	return w
}

// Suspend sets spec.suspend.
func (w *TrainJobWrapper) Suspend(s bool) *TrainJobWrapper {
	w.Object["spec"].(map[string]any)["suspend"] = s
	return w
}

// Condition adds a status condition, as the trainer sets it.
func (w *TrainJobWrapper) Condition(typ string, status metav1.ConditionStatus) *TrainJobWrapper {
	st, ok := w.Object["status"].(map[string]any)
	if !ok {
		st = map[string]any{}
		w.Object["status"] = st
	}
	cs, _ := st["conditions"].([]any)
	st["conditions"] = append(cs, map[string]any{
		"type": typ, "status": string(status), "reason": typ, "message": typ,
		"lastTransitionTime": "2025-01-01T00:00:00Z",
	})
	return w
}

// MakeTrainJobPod builds pod index of a TrainJob's node job as JobSet's Job would create it:
// JobSet's labels (the JobSet is named after the TrainJob, its replicated job is "node", one
// Job of index 0), the Job controller's completion index as a label and an annotation, and a
// container "node" with the TrainJob's resourcesPerNode. gen tells pods of successive runs
// apart, as the Job controller's random name suffix does.
func MakeTrainJobPod(job *unstructured.Unstructured, index int32, gen int64) *corev1.Pod {
	idx := strconv.Itoa(int(index))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-node-0-%d-%d", job.GetName(), index, gen), Namespace: job.GetNamespace(),
			Labels: map[string]string{
				"jobset.sigs.k8s.io/jobset-name":           job.GetName(),
				"jobset.sigs.k8s.io/replicatedjob-name":    "node",
				"jobset.sigs.k8s.io/job-index":             "0",
				"batch.kubernetes.io/job-completion-index": idx,
			},
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": idx},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}}},
	}
	res, _, _ := unstructured.NestedMap(job.Object, "spec", "trainer", "resourcesPerNode")
	if limits, ok := res["limits"].(map[string]any); ok {
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{}
		for k, v := range limits {
			pod.Spec.Containers[0].Resources.Limits[corev1.ResourceName(k)] = resource.MustParse(fmt.Sprint(v))
		}
	}
	return pod
}
