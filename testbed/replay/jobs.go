package replay

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/testbed/cluster"
	"github.com/pickyman/pickyman/traces"
)

// Annotations the replay puts on its jobs.
const (
	// AnnotationTraceID is the job's ID in the trace.
	AnnotationTraceID = "pickyman.dev/trace-id"
	// AnnotationSimEpochTime gives the testbed agent the job's true epoch time (trace time).
	AnnotationSimEpochTime = "pickyman.dev/sim-epoch-time"
	// LabelReplay marks every job of one replay.
	LabelReplay = "pickyman.dev/replay"
)

var invalid = regexp.MustCompile(`[^a-z0-9-]+`)

// QueueName is the PickyMan queue (and label value) for a trace queue: lower case, letters,
// digits and dashes, at most 50 characters; "default" for none.
func QueueName(q string) string {
	s := strings.Trim(invalid.ReplaceAllString(strings.ToLower(q), "-"), "-")
	if s == "" {
		return "default"
	}
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	return s
}

// PriorityClassName is the PriorityClass of the jobs of a trace priority ("" for 0).
func PriorityClassName(p int32) string {
	if p == 0 {
		return ""
	}
	return "pickyman-replay-" + strings.ReplaceAll(strconv.Itoa(int(p)), "-", "m")
}

// Queues returns the operator's queues for the jobs: one per trace queue, sorted.
func Queues(jobs []traces.Job) []configv1.Queue {
	seen := map[string]bool{"default": true}
	out := []configv1.Queue{{Name: "default"}}
	for _, j := range jobs {
		if q := QueueName(j.Queue); !seen[q] {
			seen[q] = true
			out = append(out, configv1.Queue{Name: q})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// PriorityClasses returns a PriorityClass for every nonzero priority of the jobs.
func PriorityClasses(jobs []traces.Job) []*schedulingv1.PriorityClass {
	seen := map[int32]bool{}
	var out []*schedulingv1.PriorityClass
	for _, j := range jobs {
		if j.Priority == 0 || seen[j.Priority] {
			continue
		}
		seen[j.Priority] = true
		out = append(out, &schedulingv1.PriorityClass{
			ObjectMeta:  metav1.ObjectMeta{Name: PriorityClassName(j.Priority)},
			Value:       j.Priority,
			Description: "PickyMan trace replay: the jobs of trace priority " + strconv.Itoa(int(j.Priority)),
		})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Value < out[b].Value })
	return out
}

// JobName is the name of the i-th job of a replay (in submit order).
func JobName(i int) string { return fmt.Sprintf("t%05d", i) }

// Kinds a replay maps trace jobs to (Options.Kind).
const (
	KindPyTorchJob = "pytorchjob"
	KindRayJob     = "rayjob"
	// KindMixed takes turns: in submit order a PyTorchJob, a RayJob, a TrainJob
	// (KindTrainJob, trainjob.go), and again.
	KindMixed = "mixed"
)

// Kinds lists the values of Options.Kind.
func Kinds() []string { return []string{KindPyTorchJob, KindRayJob, KindTrainJob, KindMixed} }

// KindOf is the kind the i-th job of a replay (in submit order) is submitted as.
func KindOf(kind string, i int) (string, error) {
	switch kind {
	case "", KindPyTorchJob:
		return KindPyTorchJob, nil
	case KindRayJob, KindTrainJob:
		return kind, nil
	case KindMixed:
		return []string{KindPyTorchJob, KindRayJob, KindTrainJob}[i%3], nil
	}
	return "", fmt.Errorf("job kind %q: want one of %s", kind, strings.Join(Kinds(), ", "))
}

// Scheme is the scheme of a replay's client: Kubernetes' types, PickyMan's and every kind a
// replay submits.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kftraining.AddToScheme, rayv1.AddToScheme, pickymanv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Build makes the job of the given kind for a trace job (BuildJob, BuildRayJob,
// BuildTrainJob).
func Build(kind string, j traces.Job, name, ns, replay string) (client.Object, error) {
	switch kind {
	case KindRayJob:
		return BuildRayJob(j, name, ns, replay)
	case KindTrainJob:
		return BuildTrainJob(j, name, ns, replay)
	}
	return BuildJob(j, name, ns, replay)
}

// BuildRayJob makes the RayJob for a trace job: a RayCluster with a head without GPUs (the
// cluster's scheduler places it) and one worker group of Workers workers of GPUsPerWorker
// GPUs each (the gang), submitted over HTTP, the cluster deleted when the job finishes; the
// same queue, priority, hints and pinning as BuildJob.
func BuildRayJob(j traces.Job, name, ns, replay string) (*rayv1.RayJob, error) {
	pj, err := BuildJob(j, name, ns, replay)
	if err != nil {
		return nil, err
	}
	var worker *kftraining.ReplicaSpec
	for _, r := range pj.Spec.PyTorchReplicaSpecs {
		worker = r
		break
	}
	tpl := *worker.Template.DeepCopy()
	tpl.Spec.Containers[0].Name = "ray-worker"
	head := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray-head", Image: "pickyman.dev/replay:latest",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
	}}}}
	n := j.Workers
	return &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: pj.ObjectMeta,
		Spec: rayv1.RayJobSpec{
			Entrypoint:               "python train.py",
			SubmissionMode:           rayv1.HTTPMode,
			ShutdownAfterJobFinishes: true,
			RayClusterSpec: &rayv1.RayClusterSpec{
				HeadGroupSpec: rayv1.HeadGroupSpec{RayStartParams: map[string]string{}, Template: head},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
					GroupName: "gpu", Replicas: &n, MinReplicas: &n, MaxReplicas: &n,
					RayStartParams: map[string]string{}, Template: tpl,
				}},
			},
		},
	}, nil
}

// BuildJob makes the PyTorchJob for a trace job: a master and Workers-1 workers of
// GPUsPerWorker GPUs each (the gang), pinned to the job's GPU model if it names one, in the
// PickyMan queue of its trace queue, with its epochs and sizes for the operator and its true
// epoch time for the testbed agent.
func BuildJob(j traces.Job, name, ns, replay string) (*kftraining.PyTorchJob, error) {
	if j.Workers < 1 || j.GPUsPerWorker < 1 {
		return nil, fmt.Errorf("trace job %s (line %d): %d workers of %d GPUs: nothing to run", j.ID, j.Line, j.Workers, j.GPUsPerWorker)
	}
	if j.Epochs < 1 || j.EpochTime <= 0 {
		return nil, fmt.Errorf("trace job %s (line %d): %d epochs of %v: the testbed agent needs both", j.ID, j.Line, j.Epochs, j.EpochTime)
	}
	hints := map[string]string{
		pickymanv1.AnnotationEpochs:          strconv.Itoa(int(j.Epochs)),
		pickymanv1.AnnotationDatasetBytes:    strconv.FormatInt(j.DatasetBytes, 10),
		pickymanv1.AnnotationCheckpointBytes: strconv.FormatInt(j.CheckpointBytes, 10),
	}
	podAnn := map[string]string{AnnotationSimEpochTime: j.EpochTime.String()}
	jobAnn := map[string]string{AnnotationTraceID: j.ID}
	for k, v := range hints {
		podAnn[k], jobAnn[k] = v, v
	}
	model := j.Model
	if model == "" {
		model = "unknown"
	}
	labels := map[string]string{
		pickymanv1.LabelQueue: QueueName(j.Queue),
		pickymanv1.LabelModel: QueueName(model),
		LabelReplay:           replay,
	}
	gpu := *resource.NewQuantity(int64(j.GPUsPerWorker), resource.DecimalSI)
	replica := func(n int32) *kftraining.ReplicaSpec {
		spec := corev1.PodSpec{
			PriorityClassName: PriorityClassName(j.Priority),
			Containers: []corev1.Container{{
				Name:  kftraining.PyTorchJobDefaultContainerName,
				Image: "pickyman.dev/replay:latest",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{cluster.GPUResource: gpu},
					Limits:   corev1.ResourceList{cluster.GPUResource: gpu},
				},
			}},
		}
		if j.GPUModel != "" {
			spec.NodeSelector = map[string]string{cluster.LabelGPUProduct: cluster.LookupGPUModel(j.GPUModel).Product}
		}
		return &kftraining.ReplicaSpec{
			Replicas:      &n,
			RestartPolicy: kftraining.RestartPolicyNever,
			Template:      corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: podAnn}, Spec: spec},
		}
	}
	specs := map[kftraining.ReplicaType]*kftraining.ReplicaSpec{kftraining.PyTorchJobReplicaTypeMaster: replica(1)}
	if j.Workers > 1 {
		specs[kftraining.PyTorchJobReplicaTypeWorker] = replica(j.Workers - 1)
	}
	return &kftraining.PyTorchJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kftraining.SchemeGroupVersion.String(), Kind: kftraining.PyTorchJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: jobAnn},
		Spec: kftraining.PyTorchJobSpec{
			RunPolicy:           kftraining.RunPolicy{CleanPodPolicy: kftraining.CleanPodPolicyPointer(kftraining.CleanPodPolicyNone)},
			PyTorchReplicaSpecs: specs,
		},
	}, nil
}

// BuildElastic makes the PyTorchJob of an elastic trace job: workers Worker replicas of per
// GPUs (no master: an elastic PyTorchJob's workers rendezvous among themselves), elastic from
// lo to hi (elasticPolicy), as sim.Shape gives them. The trace's epoch time is the one at
// workers workers, which the job says with the elastic-reference annotation, so that the
// testbed agent scales it to the size the job runs at as the simulator does.
func BuildElastic(j traces.Job, workers, per, lo, hi int32, name, ns, replay string) (*kftraining.PyTorchJob, error) {
	if j.GPUs != workers*per {
		return nil, fmt.Errorf("trace job %s (line %d): elastic shape %d x %d GPUs for a job of %d GPUs", j.ID, j.Line, workers, per, j.GPUs)
	}
	j.Workers, j.GPUsPerWorker = workers, per
	pj, err := BuildJob(j, name, ns, replay)
	if err != nil {
		return nil, err
	}
	w := pj.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster]
	w.Replicas = &workers
	pj.Spec.PyTorchReplicaSpecs = map[kftraining.ReplicaType]*kftraining.ReplicaSpec{kftraining.PyTorchJobReplicaTypeWorker: w}
	pj.Spec.ElasticPolicy = &kftraining.ElasticPolicy{MinReplicas: &lo, MaxReplicas: &hi}
	pj.Annotations[pickymanv1.AnnotationElasticReference] = strconv.Itoa(int(workers))
	return pj, nil
}
