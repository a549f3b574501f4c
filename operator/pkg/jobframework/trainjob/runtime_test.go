package trainjob

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// runtimeClient is an API server holding the given training runtimes.
func runtimeClient(t *testing.T, objs ...*unstructured.Unstructured) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	mapper := meta.NewDefaultRESTMapper(nil)
	for kind, scope := range map[string]meta.RESTScope{
		ClusterTrainingRuntimeKind: meta.RESTScopeRoot, TrainingRuntimeKind: meta.RESTScopeNamespace,
	} {
		gvk := GVK.GroupVersion().WithKind(kind)
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(kind+"List"), &unstructured.UnstructuredList{})
		mapper.Add(gvk, scope)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	return b.Build()
}

// A TrainJob that leaves its number of nodes or GPU limit to its runtime gets the runtime's,
// as the Trainer merges them; one whose runtime cannot give them is refused, naming the field.
func TestTrainJobPodSetsFromRuntime(t *testing.T) {
	c := runtimeClient(t,
		utiltesting.MakeClusterTrainingRuntime("torch").NumNodes(3).GPUs(8).Obj(),
		utiltesting.MakeClusterTrainingRuntime("torch-default").GPUs(4).Obj(),
		utiltesting.MakeClusterTrainingRuntime("plain").NoMLPolicy().Parallelism(2).GPUs(2).Obj(),
		utiltesting.MakeClusterTrainingRuntime("cpu").NumNodes(2).Obj(),
		utiltesting.MakeTrainingRuntime("team", "ns").NumNodes(5).GPUs(1).Obj(),
		utiltesting.MakeTrainingRuntime("other-team", "elsewhere").NumNodes(5).GPUs(1).Obj(),
	)
	cases := map[string]struct {
		job     *unstructured.Unstructured
		want    []pickymanv1.PodSet
		wantErr []string
	}{
		"both from the ClusterTrainingRuntime": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("", "torch").Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 3, GPUsPerPod: 8}},
		},
		"the kind named": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("ClusterTrainingRuntime", "torch").Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 3, GPUsPerPod: 8}},
		},
		"numNodes from the job, GPUs from the runtime": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("", "torch").Nodes(2).Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 2, GPUsPerPod: 8}},
		},
		"the job's resourcesPerNode replaces the runtime's limits": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("", "torch").GPUs(2).Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 3, GPUsPerPod: 2}},
		},
		"an ML policy without numNodes gives one node": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("", "torch-default").Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 1, GPUsPerPod: 4}},
		},
		"without an ML policy the node job's parallelism": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("", "plain").Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 2, GPUsPerPod: 2}},
		},
		"a TrainingRuntime of the job's namespace": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("TrainingRuntime", "team").Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 5, GPUsPerPod: 1}},
		},
		"a TrainingRuntime of another namespace": {
			job:     utiltesting.MakeTrainJob("a", "ns").Runtime("TrainingRuntime", "other-team").Obj(),
			wantErr: []string{"spec.runtimeRef.name: Not found", "TrainingRuntime other-team", "spec.trainer.numNodes"},
		},
		"a runtime that does not exist": {
			job:     utiltesting.MakeTrainJob("a", "ns").Runtime("", "gone").Nodes(2).Obj(),
			wantErr: []string{"spec.runtimeRef.name: Not found", "ClusterTrainingRuntime gone", "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]"},
		},
		"a runtime without a GPU limit": {
			job:     utiltesting.MakeTrainJob("a", "ns").Runtime("", "cpu").Obj(),
			wantErr: []string{"spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]: Required value", "nor the node container of ClusterTrainingRuntime cpu"},
		},
		"a job that sets both needs no runtime": {
			job:  utiltesting.MakeTrainJob("a", "ns").Runtime("", "gone").Nodes(4).GPUs(8).Obj(),
			want: []pickymanv1.PodSet{{Name: "node", Count: 4, GPUsPerPod: 8}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := wrapTrainJob(t, tc.job)
			if err := jobframework.ResolveReferences(context.Background(), c, j); err != nil {
				t.Fatalf("ResolveReferences: %v", err)
			}
			got, err := j.PodSets(gpuRes, gpuLabel)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("PodSets = %+v, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("PodSets error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("PodSets: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodSets (-want +got):\n%s", diff)
			}
		})
	}
}

// failingReader fails every read, as an API server that cannot be reached.
type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, types.NamespacedName, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}

// A runtime that cannot be read is an error to retry, not a job without a runtime; a cluster
// without the runtime CRDs has no runtimes.
func TestTrainJobResolveReferencesErrors(t *testing.T) {
	j := wrapTrainJob(t, utiltesting.MakeTrainJob("a", "ns").Runtime("", "torch").Obj())
	if err := j.ResolveReferences(context.Background(), failingReader{}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("ResolveReferences = %v, want the read's error", err)
	}
	noCRD := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithRESTMapper(meta.NewDefaultRESTMapper([]schema.GroupVersion{GVK.GroupVersion()})).Build()
	if err := j.ResolveReferences(context.Background(), noCRD); err != nil {
		t.Fatalf("ResolveReferences without the CRD: %v", err)
	}
	if _, err := j.PodSets(gpuRes, gpuLabel); err == nil || !strings.Contains(err.Error(), "spec.runtimeRef.name: Not found") {
		t.Errorf("PodSets = %v, want the runtime not found", err)
	}
}
