package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/pickyman/pickyman/operator/pkg/jobframework/kinds"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/jobframework"
)

// Paths of the webhooks on the manager's webhook server.
const (
	MutatePyTorchJobPath   = "/mutate-kubeflow-org-v1-pytorchjob"
	ValidatePyTorchJobPath = "/validate-kubeflow-org-v1-pytorchjob"
	MutateRayJobPath       = "/mutate-ray-io-v1-rayjob"
	ValidateRayJobPath     = "/validate-ray-io-v1-rayjob"
	MutateTrainJobPath     = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
	ValidateTrainJobPath   = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
	// ValidatePyTorchJobScalePath refuses the scale subresource of a managed PyTorchJob. It
	// has no object selector: a Scale carries none of its job's labels.
	ValidatePyTorchJobScalePath = "/validate-kubeflow-org-v1-pytorchjob-scale"
)

// +kubebuilder:webhook:path=/mutate-kubeflow-org-v1-pytorchjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=kubeflow.org,resources=pytorchjobs,verbs=create,versions=v1,name=mpytorchjob.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchExpressions":[{"key":"pickyman.dev/queue","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`
// +kubebuilder:webhook:path=/validate-kubeflow-org-v1-pytorchjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=kubeflow.org,resources=pytorchjobs,verbs=create;update,versions=v1,name=vpytorchjob.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchExpressions":[{"key":"pickyman.dev/queue","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`
// +kubebuilder:webhook:path=/validate-kubeflow-org-v1-pytorchjob-scale,mutating=false,failurePolicy=fail,sideEffects=None,groups=kubeflow.org,resources=pytorchjobs/scale,verbs=update,versions=v1,name=vpytorchjobscale.pickyman.dev,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`
// +kubebuilder:webhook:path=/mutate-ray-io-v1-rayjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create,versions=v1,name=mrayjob.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchExpressions":[{"key":"pickyman.dev/queue","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create;update,versions=v1,name=vrayjob.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchExpressions":[{"key":"pickyman.dev/queue","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`
// +kubebuilder:webhook:path=/mutate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create,versions=v1alpha1,name=mtrainjob.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchExpressions":[{"key":"pickyman.dev/queue","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`
// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.pickyman.dev,admissionReviewVersions=v1,patch=`{"objectSelector":{"matchExpressions":[{"key":"pickyman.dev/queue","operator":"Exists"}]},"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","kube-public","pickyman-system"]}]}}`

// The API server calls the job webhooks only for objects that carry the pickyman.dev/queue
// label (the object selector; on update, when the old or the new object carries it) and never
// in the system namespaces: jobs that PickyMan does not manage are created and changed whether
// or not the operator runs, and a managed job is refused while no replica serves, because a
// managed job that missed the mutating webhook would start outside PickyMan's accounting.

// MutatePath and ValidatePath are the paths of a job kind's webhooks:
// /mutate-<group with dashes>-<version>-<lower-case kind>.
func MutatePath(gvk schema.GroupVersionKind) string   { return "/mutate-" + pathSuffix(gvk) }
func ValidatePath(gvk schema.GroupVersionKind) string { return "/validate-" + pathSuffix(gvk) }

func pathSuffix(gvk schema.GroupVersionKind) string {
	return strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}

// Setup registers the webhooks of every job kind on the manager's webhook server, whether or
// not the kind's CRD is installed: the API server calls them only for kinds it serves. The
// TrainJob pod webhook is registered too; it lets pods pass when TrainJobs are not served.
func Setup(mgr ctrl.Manager, conf *configv1.Configuration) {
	dec := admission.NewDecoder(mgr.GetScheme())
	srv := mgr.GetWebhookServer()
	self := &selfUser{c: mgr.GetClient()}
	for _, in := range kinds.Integrations() {
		srv.Register(MutatePath(in.GVK), &webhook.Admission{Handler: &Mutator{Integration: in, Decoder: dec, SocketDir: agentv1alpha1.DefaultSocketDir}})
		srv.Register(ValidatePath(in.GVK), &webhook.Admission{Handler: &Validator{Integration: in, Decoder: dec, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Config: conf,
			SocketDir: agentv1alpha1.DefaultSocketDir, Operator: self.name}})
	}
	srv.Register(ValidatePyTorchJobScalePath, &webhook.Admission{Handler: &ScaleValidator{Integration: pytorchjob.Integration, Client: mgr.GetAPIReader()}})
	srv.Register(MutateTrainJobPodPath, &webhook.Admission{Handler: &TrainJobPodMutator{Decoder: dec, Reader: mgr.GetAPIReader(), SocketDir: agentv1alpha1.DefaultSocketDir}})
}

// Mutator is the mutating webhook of one job kind.
type Mutator struct {
	Integration jobframework.Integration
	Decoder     admission.Decoder
	SocketDir   string
}

var _ admission.Handler = (*Mutator)(nil)

// Handle suspends a new managed job and makes its templates PickyMan's.
func (m *Mutator) Handle(_ context.Context, req admission.Request) admission.Response {
	obj := m.Integration.NewObject()
	if err := m.Decoder.Decode(req, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !jobframework.Managed(obj) {
		return admission.Allowed("not managed by PickyMan")
	}
	g := m.Integration.Wrap(obj)
	g.Suspend(true)
	jobframework.MutateTemplates(g, jobframework.AllocationName(m.Integration.GVK.Kind, obj.GetName()), m.SocketDir, "")
	raw, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// Validator is the validating webhook of one job kind.
type Validator struct {
	Integration jobframework.Integration
	Decoder     admission.Decoder
	// Client reads Allocations, normally from the informer cache; Reader, when set, is the
	// API server, asked whenever the cache says a job was never admitted (the cache may not
	// hold an admission yet).
	Client client.Reader
	Reader client.Reader
	Config *configv1.Configuration
	// SocketDir is the agent's socket directory (default agentv1alpha1.DefaultSocketDir).
	SocketDir string
	// Operator returns the operator's own user name, the only one that may suspend or resume
	// a managed job; nil: nobody may.
	Operator func(ctx context.Context) (string, error)
}

// templatesKept refuses an update that takes from a managed job's pod templates what makes
// them PickyMan's (jobframework.TemplateErrors), naming each field. Only what the update
// changes counts: a job created before a check existed is not refused for lacking it.
func (v *Validator) templatesKept(old, job jobframework.GenericJob) field.ErrorList {
	dir := v.SocketDir
	if dir == "" {
		dir = agentv1alpha1.DefaultSocketDir
	}
	alloc := jobframework.AllocationName(v.Integration.GVK.Kind, job.Object().GetName())
	before := map[string]bool{}
	oldTemplates := old.PodTemplates()
	for name, t := range oldTemplates {
		for _, e := range jobframework.TemplateErrors(jobframework.PodSetPath(old, name).Child("template"), t, alloc, dir) {
			before[e.Error()] = true
		}
	}
	templates := job.PodTemplates()
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		if _, existed := oldTemplates[name]; !existed {
			continue // a pod set the update adds: the gang checks see to it
		}
		for _, e := range jobframework.TemplateErrors(jobframework.PodSetPath(job, name).Child("template"), templates[name], alloc, dir) {
			if !before[e.Error()] {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// suspendKept refuses a change of a managed job's suspend flag by anyone but the operator:
// PickyMan holds the job's GPUs in its Allocation and resumes it there; a job a user resumed
// would run on GPUs promised to others, and one a user suspended would hold GPUs it does
// not use.
func (v *Validator) suspendKept(ctx context.Context, req admission.Request, old, job jobframework.GenericJob) (field.ErrorList, error) {
	if old.IsSuspended() == job.IsSuspended() {
		return nil, nil
	}
	if v.Operator != nil {
		self, err := v.Operator(ctx)
		if err != nil {
			return nil, fmt.Errorf("the operator's own user name: %w", err)
		}
		if req.UserInfo.Username == self {
			return nil, nil
		}
	}
	p := field.NewPath("spec", "suspend")
	if v.Integration.GVK == pytorchjob.Integration.GVK {
		p = field.NewPath("spec", "runPolicy", "suspend")
	}
	return field.ErrorList{field.Forbidden(p, fmt.Sprintf(
		"only PickyMan suspends and resumes a job it manages (it holds the job's GPUs and checkpoints it first); set %t by %q refused: delete the job to stop it",
		job.IsSuspended(), req.UserInfo.Username))}, nil
}

var _ admission.Handler = (*Validator)(nil)

// Handle validates a managed job on create and update.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	obj := v.Integration.NewObject()
	if err := v.Decoder.Decode(req, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	job := v.Integration.Wrap(obj)
	if err := jobframework.ResolveReferences(ctx, v.Client, job); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	var errs field.ErrorList
	switch req.Operation {
	case admissionv1.Create:
		if !jobframework.Managed(obj) {
			return admission.Allowed("")
		}
		errs = v.validate(ctx, job)
	case admissionv1.Update:
		oldObj := v.Integration.NewObject()
		if err := v.Decoder.DecodeRaw(req.OldObject, oldObj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		old := v.Integration.Wrap(oldObj)
		if err := jobframework.ResolveReferences(ctx, v.Client, old); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if !jobframework.Managed(obj) && !jobframework.Managed(oldObj) {
			return admission.Allowed("")
		}
		var err error
		errs, err = v.validateUpdate(ctx, old, job)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if len(errs) == 0 && jobframework.Managed(oldObj) {
			errs = v.templatesKept(old, job)
			more, err := v.suspendKept(ctx, req, old, job)
			if err != nil {
				return admission.Errored(http.StatusInternalServerError, err)
			}
			errs = append(errs, more...)
		}
		if len(errs) == 0 && jobframework.Managed(obj) && gangChanged(old, job, v.Config) {
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

// gangChanged says whether an update changed the job's pod templates or pod sets.
func gangChanged(old, job jobframework.GenericJob, conf *configv1.Configuration) bool {
	if !reflect.DeepEqual(old.PodTemplates(), job.PodTemplates()) {
		return true
	}
	os, oerr := old.PodSets(conf.GPUResource, conf.GPUProductLabel)
	ns, nerr := job.PodSets(conf.GPUResource, conf.GPUProductLabel)
	return oerr != nil || nerr != nil || !reflect.DeepEqual(os, ns)
}

var queuePath = field.NewPath("metadata", "labels").Key(v1alpha1.LabelQueue)

// validate checks a managed job: known queue, a GPU limit on every replica, one gang shape,
// valid hints, and every worker fits on some node.
func (v *Validator) validate(ctx context.Context, job jobframework.GenericJob) field.ErrorList {
	var errs field.ErrorList
	obj := job.Object()
	spec := field.NewPath("spec")
	errs = append(errs, v.checkQueue(obj)...)
	errs = append(errs, forgedAnnotations(job)...)
	sets, err := job.PodSets(v.Config.GPUResource, v.Config.GPUProductLabel)
	if err != nil {
		if agg, ok := err.(interface{ Errors() []error }); ok {
			for _, e := range agg.Errors() {
				if fe, ok := e.(*field.Error); ok {
					errs = append(errs, fe)
					continue
				}
				errs = append(errs, field.Invalid(spec, "", e.Error()))
			}
		} else {
			errs = append(errs, field.Invalid(spec, "", err.Error()))
		}
		return errs
	}
	if _, _, _, err := jobframework.GangShape(sets); err != nil {
		errs = append(errs, field.Invalid(spec, "", err.Error()))
	}
	if _, err := jobframework.ReadHints(obj); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations"), "", err.Error()))
	}
	fitErrs, err := v.fitsSomeNode(ctx, job, sets)
	if err != nil {
		errs = append(errs, field.InternalError(spec, err))
	}
	return append(errs, fitErrs...)
}

// fitsSomeNode rejects a pod set whose pods ask for more GPUs than any node of the wanted
// GPU model has.
func (v *Validator) fitsSomeNode(ctx context.Context, job jobframework.GenericJob, sets []v1alpha1.PodSet) (field.ErrorList, error) {
	// Read from the cache without copies: only read here, and each admission request lists
	// every node (copying 1,000 nodes took a quarter of the operator's CPU while 5,000 jobs
	// were submitted, `make bench-admission`).
	var nodes corev1.NodeList
	if err := v.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	view := jobframework.NodeView{GPUResource: corev1.ResourceName(v.Config.GPUResource), GPUProductLabel: v.Config.GPUProductLabel}
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
			p := jobframework.GPULimitPath(job, s.Name, v.Config.GPUResource)
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
func (v *Validator) validateUpdate(ctx context.Context, old, job jobframework.GenericJob) (field.ErrorList, error) {
	a := &v1alpha1.Allocation{}
	obj := job.Object()
	if oq, nq := old.Object().GetLabels()[v1alpha1.LabelQueue], obj.GetLabels()[v1alpha1.LabelQueue]; oq != nq && jobframework.Managed(obj) {
		// A job not yet admitted may move to another queue, but only to one that exists
		// and takes its namespace.
		if errs := v.checkQueue(obj); len(errs) > 0 {
			return errs, nil
		}
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: jobframework.AllocationName(v.Integration.GVK.Kind, obj.GetName())}
	admitted, err := v.admitted(ctx, v.Client, key, a)
	if err == nil && !admitted && v.Reader != nil {
		admitted, err = v.admitted(ctx, v.Reader, key, a)
	}
	if err != nil || !admitted {
		return nil, err
	}
	var errs field.ErrorList
	if oq, nq := old.Object().GetLabels()[v1alpha1.LabelQueue], obj.GetLabels()[v1alpha1.LabelQueue]; oq != nq {
		errs = append(errs, field.Forbidden(queuePath, fmt.Sprintf("the queue of an admitted job cannot change (from %q to %q)", oq, nq)))
	}
	os, oerr := old.PodSets(v.Config.GPUResource, v.Config.GPUProductLabel)
	ns, nerr := job.PodSets(v.Config.GPUResource, v.Config.GPUProductLabel)
	// The operator resizes an elastic job by writing the new size to its Allocation first,
	// then to the job: a change to exactly the Allocation's pod sets is that resize.
	resize := a.Spec.Elastic != nil && nerr == nil && reflect.DeepEqual(ns, a.Spec.PodSets)
	if oerr == nil && !resize && (nerr != nil || !reflect.DeepEqual(os, ns)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"),
			fmt.Sprintf("the gang shape of an admitted job cannot change (was %s)", shape(os))))
	}
	return errs, nil
}

// admitted reads a job's Allocation into a through r and says whether it has been admitted
// (left Queued at least once); a missing Allocation has not.
func (v *Validator) admitted(ctx context.Context, r client.Reader, key types.NamespacedName, a *v1alpha1.Allocation) (bool, error) {
	err := r.Get(ctx, key, a)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return a.Status.FirstAdmitted != nil || a.Status.Phase != v1alpha1.AllocationQueued, nil
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

// forgedAnnotations refuses pod templates that carry the annotations only the node agent
// (progress, checkpoint acknowledgement) or the operator (checkpoint request) write on
// running pods: the API server would refuse the pods (config/agent/admission_policy.yaml),
// so the job is refused at once, naming the field.
func forgedAnnotations(job jobframework.GenericJob) field.ErrorList {
	var errs field.ErrorList
	templates := job.PodTemplates()
	sets := make([]string, 0, len(templates))
	for name := range templates {
		sets = append(sets, name)
	}
	slices.Sort(sets)
	for _, name := range sets {
		for _, k := range []string{agentv1alpha1.AnnotationProgress, agentv1alpha1.AnnotationCheckpointAck, agentv1alpha1.AnnotationCheckpointRequest} {
			if _, ok := templates[name].Annotations[k]; ok {
				p := jobframework.PodSetPath(job, name).Child("template", "metadata", "annotations").Key(k)
				errs = append(errs, field.Forbidden(p, "only the node agent and the operator write it, on running pods"))
			}
		}
	}
	return errs
}

// checkQueue checks that the job's queue exists and takes jobs from its namespace.
func (v *Validator) checkQueue(obj client.Object) field.ErrorList {
	q := obj.GetLabels()[v1alpha1.LabelQueue]
	var names []string
	for i := range v.Config.Queues {
		cq := &v.Config.Queues[i]
		if cq.Name != q {
			names = append(names, cq.Name)
			continue
		}
		if !cq.Admits(obj.GetNamespace()) {
			return field.ErrorList{field.Forbidden(queuePath, fmt.Sprintf("queue %q takes jobs only from the namespaces %s, not from %q",
				q, strings.Join(cq.Namespaces, ", "), obj.GetNamespace()))}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(queuePath, q, names)}
}

// selfUser learns the operator's own user name from the API server (a SelfSubjectReview,
// which every authenticated user may create) on first use, and keeps it.
type selfUser struct {
	c    client.Client
	mu   sync.Mutex
	user string
}

func (u *selfUser) name(ctx context.Context) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.user != "" {
		return u.user, nil
	}
	r := &authenticationv1.SelfSubjectReview{}
	if err := u.c.Create(ctx, r); err != nil {
		return "", err
	}
	if r.Status.UserInfo.Username == "" {
		return "", errors.New("the API server named no user")
	}
	u.user = r.Status.UserInfo.Username
	return u.user, nil
}

// ScaleValidator refuses a change through the scale subresource of a job PickyMan manages
// (kubectl scale, a HorizontalPodAutoscaler): a gang's size is what PickyMan admitted, and an
// elastic job is resized by PickyMan between its bounds. Jobs of no queue pass.
type ScaleValidator struct {
	Integration jobframework.Integration
	Client      client.Reader
}

var _ admission.Handler = (*ScaleValidator)(nil)

// Handle reads the scaled job and refuses the change if it is managed.
func (s *ScaleValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj := s.Integration.NewObject()
	err := s.Client.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, obj)
	if apierrors.IsNotFound(err) {
		return admission.Allowed("")
	}
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !jobframework.Managed(obj) {
		return admission.Allowed("not managed by PickyMan")
	}
	p := field.NewPath("spec", "replicas")
	return admission.Denied(field.Forbidden(p, fmt.Sprintf(
		"%s %s/%s is managed by PickyMan (queue %q): its gang's size is what PickyMan admits, and an elastic job is resized by PickyMan within its elasticPolicy bounds",
		s.Integration.GVK.Kind, req.Namespace, req.Name, obj.GetLabels()[v1alpha1.LabelQueue])).Error())
}
