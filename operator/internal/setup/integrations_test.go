package setup

import (
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/rayjob"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A kind is enabled only when the API server serves its CRD: a cluster without the Trainer
// runs PickyMan for its PyTorchJobs and RayJobs.
func TestEnabledIntegrations(t *testing.T) {
	for name, tc := range map[string]struct {
		served []schema.GroupVersionKind
		want   []string
	}{
		"every kind": {
			served: []schema.GroupVersionKind{pytorchjob.GVK, rayjob.GVK, trainjob.GVK},
			want:   []string{"PyTorchJob", "RayJob", "TrainJob"},
		},
		"no Trainer": {
			served: []schema.GroupVersionKind{pytorchjob.GVK, rayjob.GVK},
			want:   []string{"PyTorchJob", "RayJob"},
		},
		"the Trainer alone": {
			served: []schema.GroupVersionKind{trainjob.GVK},
			want:   []string{"TrainJob"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			for _, gvk := range tc.served {
				mapper.Add(gvk, meta.RESTScopeNamespace)
			}
			got, err := EnabledIntegrations(mapper)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, in := range got {
				kinds = append(kinds, in.GVK.Kind)
			}
			if d := cmp.Diff(tc.want, kinds); d != "" {
				t.Errorf("enabled kinds (-want +got):\n%s", d)
			}
		})
	}
}
