package replay

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"
	"github.com/pickyman/pickyman/testbed/cluster"
)

// TestBuildTrainJob: a trace job as a TrainJob has the trace job's gang as the operator's
// TrainJob adapter reads it (numNodes nodes of GPUsPerWorker GPUs, pinned to the GPU model by
// the node job's override), the same queue and hints as the PyTorchJob, and its runtime's pod
// template carries the hints and the testbed epoch time for the agent.
func TestBuildTrainJob(t *testing.T) {
	obj, err := Build(KindTrainJob, traceJob("job-1", 3, 4), "t00001", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	tj, ok := obj.(*unstructured.Unstructured)
	if !ok || tj.GroupVersionKind() != trainjob.GVK {
		t.Fatalf("built %T %v, want a TrainJob", obj, obj.GetObjectKind().GroupVersionKind())
	}
	sets, err := trainjob.Integration.Wrap(tj).PodSets(cluster.GPUResource.String(), cluster.LabelGPUProduct)
	if err != nil {
		t.Fatal(err)
	}
	want := []pickymanv1.PodSet{{Name: "node", Count: 3, GPUsPerPod: 4, GPUModel: "Tesla-V100-SXM2-32GB"}}
	if d := cmp.Diff(want, sets); d != "" {
		t.Errorf("gang (-want +got):\n%s", d)
	}
	if tj.GetLabels()[pickymanv1.LabelQueue] != "vc-7-a" || tj.GetAnnotations()[AnnotationTraceID] != "job-1" || tj.GetAnnotations()[pickymanv1.AnnotationEpochs] != "10" {
		t.Errorf("labels %v annotations %v", tj.GetLabels(), tj.GetAnnotations())
	}
	if h, err := jobframework.ReadHints(tj); err != nil || h.Epochs != 10 || h.CheckpointBytes != 1e9 {
		t.Errorf("hints %+v, %v", h, err)
	}

	rt, err := TrainingRuntimeFor(tj)
	if err != nil {
		t.Fatal(err)
	}
	if rt.GetKind() != trainjob.TrainingRuntimeKind || rt.GetName() != "t00001" || rt.GetNamespace() != "ns" {
		t.Errorf("runtime %s %s/%s, want the TrainJob's TrainingRuntime", rt.GetKind(), rt.GetNamespace(), rt.GetName())
	}
	jobs, _, _ := unstructured.NestedSlice(rt.Object, "spec", "template", "spec", "replicatedJobs")
	if len(jobs) != 1 {
		t.Fatalf("replicated jobs %v", jobs)
	}
	ann, _, _ := unstructured.NestedStringMap(jobs[0].(map[string]any), "template", "spec", "template", "metadata", "annotations")
	if ann[AnnotationSimEpochTime] != "6m0s" || ann[pickymanv1.AnnotationEpochs] != "10" || ann[pickymanv1.AnnotationCheckpointBytes] != "1000000000" {
		t.Errorf("pod template annotations %v", ann)
	}
}

// createTrainingRuntimes creates the runtime of each TrainJob of a replay, and only of those.
func TestCreateTrainingRuntimes(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(trainjob.GVK.GroupVersion().WithKind(trainjob.TrainingRuntimeKind), &unstructured.Unstructured{})
	c := fake.NewClientBuilder().WithScheme(s).Build()
	var built []client.Object
	for i := range 3 {
		obj, err := Build(mustKind(t, KindMixed, i), traceJob("job", 1, 8), JobName(i), "ns", "r1")
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, obj)
	}
	for range 2 { // twice: runtimes that exist are kept
		if err := createTrainingRuntimes(context.Background(), c, built); err != nil {
			t.Fatal(err)
		}
	}
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(trainjob.GVK.GroupVersion().WithKind(trainjob.TrainingRuntimeKind + "List"))
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rt := range list.Items {
		names = append(names, rt.GetName())
	}
	if d := cmp.Diff([]string{JobName(2)}, names); d != "" {
		t.Errorf("runtimes (-want +got):\n%s", d)
	}
}

func mustKind(t *testing.T, kind string, i int) string {
	t.Helper()
	k, err := KindOf(kind, i)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
