package replay

import (
	"strings"
	"testing"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/sim"
	"github.com/pickyman/pickyman/traces"
)

// An elastic trace job becomes the elastic PyTorchJob of the simulator's shape: Worker
// replicas only, elasticPolicy from sim.Shape, its requested size as the reference, and the
// operator's adapter reads the same bounds back.
func TestBuildElastic(t *testing.T) {
	j := traceJob("job-1", 1, 8)
	j.Synthesized |= traces.FieldSet(traces.FieldWorkers)
	w, per, lo, hi := sim.Shape(&j, 1, sim.Elasticity{Share: 1, Grow: 2}, 8)
	if w != 8 || per != 1 || lo != 4 || hi != 16 {
		t.Fatalf("shape %dx%d elastic %d..%d, want 8x1 elastic 4..16", w, per, lo, hi)
	}
	pj, err := BuildElastic(j, w, per, lo, hi, "t00001", "ns", "r1")
	if err != nil {
		t.Fatal(err)
	}
	specs := pj.Spec.PyTorchReplicaSpecs
	if _, ok := specs[kftraining.PyTorchJobReplicaTypeMaster]; ok || len(specs) != 1 {
		t.Fatalf("replica types %v, want Worker only", specs)
	}
	if n := *specs[kftraining.PyTorchJobReplicaTypeWorker].Replicas; n != 8 {
		t.Fatalf("%d Worker replicas, want 8", n)
	}
	if got := pj.Annotations[pickymanv1.AnnotationElasticReference]; got != "8" {
		t.Fatalf("elastic reference %q, want 8 (the requested size the trace's epoch time is at)", got)
	}
	set, alo, ahi, ok, err := (*pytorchjob.Job)(pj).ElasticBounds()
	if err != nil || !ok || set != "Worker" || alo != 4 || ahi != 16 {
		t.Fatalf("adapter reads %q %d..%d ok %v err %v, want Worker 4..16", set, alo, ahi, ok, err)
	}
	sets, err := (*pytorchjob.Job)(pj).PodSets("nvidia.com/gpu", "nvidia.com/gpu.product")
	if err != nil || len(sets) != 1 || sets[0].Count*sets[0].GPUsPerPod != 8 {
		t.Fatalf("pod sets %+v (err %v), want 8 GPUs", sets, err)
	}
	if _, err := BuildElastic(j, 4, 1, 2, 4, "t00002", "ns", "r1"); err == nil || !strings.Contains(err.Error(), "job-1 (line 3)") {
		t.Fatalf("a shape that is not the job's GPUs: err %v, want one naming the job and line", err)
	}
}
