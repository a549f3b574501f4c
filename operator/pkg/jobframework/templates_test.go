package jobframework_test

import (
	"strconv"
	"testing"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"
)

// Training containers get the agent's socket directory read-only (a read-write mount would
// let any of them replace the socket its neighbours on the node connect to), even where the
// template mounts it read-write itself, and the agent's uid to check the socket against.
func TestMutateTemplatesSocketReadOnly(t *testing.T) {
	job := utiltesting.MakePyTorchJob("j", "ns").Master(1).Workers(1, 1).Obj()
	w := &job.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Template.Spec
	w.Containers[0].VolumeMounts = append(w.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "pickyman-agent", MountPath: "/var/run/pickyman"})
	g := (*pytorchjob.Job)(job)
	if !jobframework.MutateTemplates(g, "pytorchjob-j", agentv1alpha1.DefaultSocketDir, "") {
		t.Fatal("MutateTemplates changed nothing")
	}
	for rt, spec := range job.Spec.PyTorchReplicaSpecs {
		for _, c := range spec.Template.Spec.Containers {
			mounts := 0
			for _, m := range c.VolumeMounts {
				if m.Name == "pickyman-agent" {
					mounts++
					if !m.ReadOnly {
						t.Errorf("%s container %s mounts the socket directory read-write", rt, c.Name)
					}
				}
			}
			if mounts != 1 {
				t.Errorf("%s container %s has %d socket mounts, want 1", rt, c.Name, mounts)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env[agentv1alpha1.EnvAgentUID] != strconv.Itoa(agentv1alpha1.AgentUID) || env[agentv1alpha1.EnvSocket] == "" {
				t.Errorf("%s container %s environment %v lacks the socket or the agent's uid", rt, c.Name, env)
			}
		}
	}
	if jobframework.MutateTemplates(g, "pytorchjob-j", agentv1alpha1.DefaultSocketDir, "") {
		t.Error("a second MutateTemplates changed something")
	}
}
