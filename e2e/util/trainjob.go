package util

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/pickyman/pickyman/testbed/cluster"
)

// TrainJobWrapper builds a Kubeflow Trainer v2 trainer.kubeflow.org/v1alpha1 TrainJob for
// the e2e suites, together with the namespaced TrainingRuntime it runs on. A TrainJob has no
// pod template: its pods come from its runtime's, so the runtime carries what the testbed
// agent reads from the pods (the simulated training) and the job carries the hints the
// operator reads.
type TrainJobWrapper struct {
	job     *unstructured.Unstructured
	runtime *unstructured.Unstructured
}

// MakeTrainJob starts a TrainJob named name in ns on the TrainingRuntime name+"-runtime" of
// the same namespace: a torch ML policy and one replicated job "node", the trainer step,
// whose container "node" the testbed agent trains. Neither sets a number of nodes or GPUs.
func MakeTrainJob(name, ns string) *TrainJobWrapper {
	rt := name + "-runtime"
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": rt, "kind": "TrainingRuntime"},
		},
	}}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			// The training-operator's job-name label: the testbed agent and PodJob name a
			// pod's job by it.
			Labels: map[string]string{"training.kubeflow.org/job-name": name},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "pickyman.dev/fake-training:latest"}}},
	}
	run := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainingRuntime",
		"metadata":   map[string]any{"name": rt, "namespace": ns},
		"spec": map[string]any{
			"mlPolicy": map[string]any{"torch": map[string]any{"numProcPerNode": "auto"}},
			"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "node",
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
					"spec":     map[string]any{"template": toMap(&tpl)},
				},
			}}}},
		},
	}}
	return &TrainJobWrapper{job: job, runtime: run}
}

func toMap(tpl *corev1.PodTemplateSpec) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tpl)
	if err != nil {
		panic(err)
	}
	return m
}

// podTemplate is the runtime's node pod template, decoded; setPodTemplate writes it back.
func (w *TrainJobWrapper) podTemplate() *corev1.PodTemplateSpec {
	m, _, _ := unstructured.NestedMap(w.runtime.Object, "spec", "template", "spec")
	jobs := m["replicatedJobs"].([]any)
	spec := jobs[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	tpl := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec["template"].(map[string]any), tpl); err != nil {
		panic(err)
	}
	return tpl
}

func (w *TrainJobWrapper) setPodTemplate(tpl *corev1.PodTemplateSpec) {
	jobs, _, _ := unstructured.NestedFieldNoCopy(w.runtime.Object, "spec", "template", "spec", "replicatedJobs")
	jobs.([]any)[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"] = toMap(tpl)
}

// RuntimeNodes gives the runtime's ML policy n nodes and its node container a limit of gpus
// nvidia.com/gpu: the gang the TrainJob, which sets neither, takes from its runtime.
func (w *TrainJobWrapper) RuntimeNodes(n, gpus int64) *TrainJobWrapper {
	_ = unstructured.SetNestedField(w.runtime.Object, n, "spec", "mlPolicy", "numNodes")
	tpl := w.podTemplate()
	tpl.Spec.Containers[0].Resources.Limits = corev1.ResourceList{cluster.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	w.setPodTemplate(tpl)
	return w
}

// NodeSelector selects the nodes of the node job through a pod-spec override of the TrainJob
// (PickyMan reads the GPU model from it).
func (w *TrainJobWrapper) NodeSelector(sel map[string]string) *TrainJobWrapper {
	s := map[string]any{}
	for k, v := range sel {
		s[k] = v
	}
	_ = unstructured.SetNestedSlice(w.job.Object, []any{map[string]any{
		"targetJobs":   []any{map[string]any{"name": "node"}},
		"nodeSelector": s,
	}}, "spec", "podSpecOverrides")
	return w
}

// PickyMan puts the TrainJob in a PickyMan queue with its model and hints, and gives the
// runtime's pod template the hints and the true epoch time the testbed agent simulates.
func (w *TrainJobWrapper) PickyMan(queue, model string, t Training) *TrainJobWrapper {
	meta := metav1.ObjectMeta{Labels: w.job.GetLabels(), Annotations: w.job.GetAnnotations()}
	tpl := w.podTemplate()
	applyTraining(&meta, []*corev1.PodTemplateSpec{tpl}, queue, model, t)
	w.job.SetLabels(meta.Labels)
	w.job.SetAnnotations(meta.Annotations)
	w.setPodTemplate(tpl)
	return w
}

// Obj returns the TrainJob; Runtime its TrainingRuntime, to create first.
func (w *TrainJobWrapper) Obj() *unstructured.Unstructured { return w.job.DeepCopy() }

// Runtime returns the TrainJob's TrainingRuntime.
func (w *TrainJobWrapper) Runtime() *unstructured.Unstructured { return w.runtime.DeepCopy() }

// TrainJobCondition returns the status of a condition of a TrainJob ("" when it has none).
func TrainJobCondition(job *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
