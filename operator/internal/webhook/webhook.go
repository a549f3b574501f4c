package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pickyman/pickyman/agent/pkg/protocol"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/controller"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// Paths of the webhooks on the manager's webhook server.
const (
	MutatePyTorchJobPath   = "/mutate-kubeflow-org-v1-pytorchjob"
	ValidatePyTorchJobPath = "/validate-kubeflow-org-v1-pytorchjob"
)

// +kubebuilder:webhook:path=/mutate-kubeflow-org-v1-pytorchjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=kubeflow.org,resources=pytorchjobs,verbs=create,versions=v1,name=mpytorchjob.pickyman.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-kubeflow-org-v1-pytorchjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=kubeflow.org,resources=pytorchjobs,verbs=create;update,versions=v1,name=vpytorchjob.pickyman.dev,admissionReviewVersions=v1

// Setup registers the webhooks on the manager's webhook server.
func Setup(mgr ctrl.Manager, conf *configv1.Configuration) {
	dec := admission.NewDecoder(mgr.GetScheme())
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePyTorchJobPath, &webhook.Admission{Handler: &Mutator{Decoder: dec, SocketDir: protocol.DefaultSocketDir}})
	srv.Register(ValidatePyTorchJobPath, &webhook.Admission{Handler: &Validator{Decoder: dec, Client: mgr.GetClient(), Config: conf}})
}

// Mutator is the mutating webhook of PyTorchJobs.
type Mutator struct {
	Decoder   admission.Decoder
	SocketDir string
}

var _ admission.Handler = (*Mutator)(nil)

// Handle suspends a new managed job and makes its templates PickyMan's.
func (m *Mutator) Handle(_ context.Context, req admission.Request) admission.Response {
	job := &kftraining.PyTorchJob{}
	if err := m.Decoder.Decode(req, job); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !jobframework.Managed(job) {
		return admission.Allowed("not managed by PickyMan")
	}
	g := (*jobframework.PyTorchJob)(job)
	g.Suspend(true)
	controller.MutateTemplates(g, jobframework.AllocationName(kftraining.PyTorchJobKind, job.Name), m.SocketDir, "")
	raw, err := json.Marshal(job)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// Validator is the validating webhook of PyTorchJobs.
type Validator struct {
	Decoder admission.Decoder
	Client  client.Reader
	Config  *configv1.Configuration
}

var _ admission.Handler = (*Validator)(nil)

// Handle validates a managed job on create and update.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	job := &kftraining.PyTorchJob{}
	if err := v.Decoder.Decode(req, job); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var errs field.ErrorList
	switch req.Operation {
	case admissionv1.Create:
		if !jobframework.Managed(job) {
			return admission.Allowed("")
		}
		errs = v.validate(ctx, job)
	case admissionv1.Update:
		old := &kftraining.PyTorchJob{}
		if err := v.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if !jobframework.Managed(job) && !jobframework.Managed(old) {
			return admission.Allowed("")
		}
		var err error
		errs, err = v.validateUpdate(ctx, old, job)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if len(errs) == 0 && jobframework.Managed(job) && !reflect.DeepEqual(old.Spec.PyTorchReplicaSpecs, job.Spec.PyTorchReplicaSpecs) {
			errs = v.validate(ctx, job)
		}
	default:
		return admission.Allowed("")
	}
	if len(errs) > 0 {
		return admission.Denied(errs.ToAggregate().Error())
	}
	return admission.Allowed("")
}

var queuePath = field.NewPath("metadata", "labels").Key(v1alpha1.LabelQueue)

// validate checks a managed job: known queue, a GPU limit on every replica, one gang shape,
// valid hints, and every worker fits on some node.
func (v *Validator) validate(ctx context.Context, job *kftraining.PyTorchJob) field.ErrorList {
	var errs field.ErrorList
	q := job.Labels[v1alpha1.LabelQueue]
	known := false
	var names []string
	for _, cq := range v.Config.Queues {
		known = known || cq.Name == q
		names = append(names, cq.Name)
	}
	if !known {
		errs = append(errs, field.NotSupported(queuePath, q, names))
	}
	g := (*jobframework.PyTorchJob)(job)
	sets, err := g.PodSets(v.Config.GPUResource, v.Config.GPUProductLabel)
	if err != nil {
		if agg, ok := err.(interface{ Errors() []error }); ok {
			for _, e := range agg.Errors() {
				if fe, ok := e.(*field.Error); ok {
					errs = append(errs, fe)
					continue
				}
				errs = append(errs, field.Invalid(field.NewPath("spec", "pytorchReplicaSpecs"), "", e.Error()))
			}
		} else {
			errs = append(errs, field.Invalid(field.NewPath("spec", "pytorchReplicaSpecs"), "", err.Error()))
		}
		return errs
	}
	if _, _, _, err := jobframework.GangShape(sets); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "pytorchReplicaSpecs"), "", err.Error()))
	}
	if _, err := jobframework.ReadHints(job); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations"), "", err.Error()))
	}
	fitErrs, err := v.fitsSomeNode(ctx, sets)
	if err != nil {
		errs = append(errs, field.InternalError(field.NewPath("spec", "pytorchReplicaSpecs"), err))
	}
	return append(errs, fitErrs...)
}

// fitsSomeNode rejects a pod set whose pods ask for more GPUs than any node of the wanted
// GPU model has.
func (v *Validator) fitsSomeNode(ctx context.Context, sets []v1alpha1.PodSet) (field.ErrorList, error) {
	var nodes corev1.NodeList
	if err := v.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	view := controller.NodeView{GPUResource: corev1.ResourceName(v.Config.GPUResource), GPUProductLabel: v.Config.GPUProductLabel}
	var errs field.ErrorList
	for _, s := range sets {
		best := int32(0)
		for i := range nodes.Items {
			n, ok := view.SchedNode(&nodes.Items[i])
			if ok && (s.GPUModel == "" || n.GPUModel == s.GPUModel) && n.GPUs > best {
				best = n.GPUs
			}
		}
		if s.GPUsPerPod > best {
			p := field.NewPath("spec", "pytorchReplicaSpecs").Key(s.Name).Child("template", "spec", "containers").Key("resources.limits").Key(v.Config.GPUResource)
			model := ""
			if s.GPUModel != "" {
				model = fmt.Sprintf(" of model %q", s.GPUModel)
			}
			errs = append(errs, field.Invalid(p, s.GPUsPerPod, fmt.Sprintf("a %s pod fits on no node: the largest node%s has %d GPUs", s.Name, model, best)))
		}
	}
	return errs, nil
}

// validateUpdate rejects a change of the queue or the gang shape of a job that has been
// admitted (its Allocation has left Queued at least once).
func (v *Validator) validateUpdate(ctx context.Context, old, job *kftraining.PyTorchJob) (field.ErrorList, error) {
	a := &v1alpha1.Allocation{}
	err := v.Client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: jobframework.AllocationName(kftraining.PyTorchJobKind, job.Name)}, a)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if a.Status.FirstAdmitted == nil && a.Status.Phase == v1alpha1.AllocationQueued {
		return nil, nil
	}
	var errs field.ErrorList
	if oq, nq := old.Labels[v1alpha1.LabelQueue], job.Labels[v1alpha1.LabelQueue]; oq != nq {
		errs = append(errs, field.Forbidden(queuePath, fmt.Sprintf("the queue of an admitted job cannot change (from %q to %q)", oq, nq)))
	}
	os, oerr := (*jobframework.PyTorchJob)(old).PodSets(v.Config.GPUResource, v.Config.GPUProductLabel)
	ns, nerr := (*jobframework.PyTorchJob)(job).PodSets(v.Config.GPUResource, v.Config.GPUProductLabel)
	if oerr == nil && (nerr != nil || !reflect.DeepEqual(os, ns)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "pytorchReplicaSpecs"),
			fmt.Sprintf("the gang shape of an admitted job cannot change (was %s)", shape(os))))
	}
	return errs, nil
}

func shape(sets []v1alpha1.PodSet) string {
	s := ""
	for i, p := range sets {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s x %d GPUs", p.Count, p.Name, p.GPUsPerPod)
	}
	return s
}
