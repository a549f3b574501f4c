package webhook

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// MutateTrainJobPodPath is the path of the webhook that makes a TrainJob's node pods
// PickyMan's.
const MutateTrainJobPodPath = "/mutate-trainjob-pod"

// The API server calls it only for pods of a JobSet's replicated job "node" (the object
// selector), which is where a TrainJob's trainer pods come from; it fails closed, as the job
// webhooks do, because a node pod that missed it would be placed by the cluster's scheduler
// outside PickyMan's accounting.
// +kubebuilder:webhook:path=/mutate-trainjob-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mtrainjobpod.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchLabels":{"jobset.sigs.k8s.io/replicatedjob-name":"node"}},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`

// TrainJobPodMutator gives the pods of a PickyMan TrainJob's node job, as they are created,
// what the job webhook and the job controller give the pod templates of the other kinds: a
// TrainJob has no template of its own to carry them (trainjob.Job). The pod gets
// schedulerName pickyman, the Allocation label, the agent's socket and, when the job has an
// Allocation, its resume point. Pods of other JobSets, of unmanaged TrainJobs, and every pod
// while TrainJobs are not served pass unchanged.
type TrainJobPodMutator struct {
	Decoder admission.Decoder
	// Reader reads TrainJobs and Allocations from the API server: the pods of a job come
	// right after the operator unsuspended it, and the resume point must be the current one.
	Reader    client.Reader
	SocketDir string
}

var _ admission.Handler = (*TrainJobPodMutator)(nil)

// Handle mutates a node pod of a managed TrainJob.
func (m *TrainJobPodMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := m.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	name := pod.Labels[trainjob.JobSetNameLabel]
	if name == "" || pod.Labels[trainjob.ReplicatedJobNameLabel] != trainjob.TrainJobNodePodSet {
		return admission.Allowed("not a TrainJob's node pod")
	}
	in := trainjob.Integration
	obj := in.NewObject()
	err := m.Reader.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return admission.Allowed("not a TrainJob's pod")
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, err)
	case !jobframework.Managed(obj):
		return admission.Allowed("not managed by PickyMan")
	}
	allocName := jobframework.AllocationName(in.GVK.Kind, name)
	resume := ""
	a := &v1alpha1.Allocation{}
	err = m.Reader.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: allocName}, a)
	switch {
	case err == nil && a.Spec.Job.UID == string(obj.GetUID()):
		resume = jobframework.ResumePoint(a)
	case err != nil && !apierrors.IsNotFound(err):
		return admission.Errored(http.StatusInternalServerError, err)
	}
	t := &corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}
	jobframework.MutateTemplates(podAsJob{GenericJob: in.Wrap(obj), template: t}, allocName, m.SocketDir, resume)
	pod.ObjectMeta, pod.Spec = t.ObjectMeta, t.Spec
	raw, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// podAsJob is a job whose one pod template is a pod's: the operator's template mutation,
// applied to a pod.
type podAsJob struct {
	jobframework.GenericJob
	template *corev1.PodTemplateSpec
}

func (p podAsJob) PodTemplates() map[string]*corev1.PodTemplateSpec {
	return map[string]*corev1.PodTemplateSpec{trainjob.TrainJobNodePodSet: p.template}
}
