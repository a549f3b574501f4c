package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"
	utiltypes "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The annotation the PickyMan agent writes training progress to, and the label the PickyMan
// operator puts on the pods it places (github.com/pickyman/pickyman/api/agent/v1alpha1 and
// api/v1alpha1; this module does not import them, to keep KubeRay's dependency versions).
const (
	progressAnnotation = "pickyman.dev/progress"
	epochsAnnotation   = "pickyman.dev/epochs"
	allocationLabel    = "pickyman.dev/allocation"
)

// provider gives KubeRay's controllers the testbed dashboard instead of an HTTP client of a
// Ray head (utils.ClientProvider).
type provider struct{ dashboards *dashboards }

var _ utils.ClientProvider = (*provider)(nil)

func (p *provider) GetDashboardClient(manager.Manager) func(*rayv1.RayCluster, string) (dashboardclient.RayDashboardClientInterface, error) {
	return func(c *rayv1.RayCluster, _ string) (dashboardclient.RayDashboardClientInterface, error) {
		return &dashboard{all: p.dashboards, namespace: c.Namespace, cluster: c.Name}, nil
	}
}

func (p *provider) GetHttpProxyClient(manager.Manager) func(string, string, string, int) utils.RayHttpProxyClientInterface {
	return func(string, string, string, int) utils.RayHttpProxyClientInterface { return noProxy{} }
}

// noProxy is the proxy-actor client of a cluster without Ray Serve.
type noProxy struct{}

func (noProxy) CheckProxyActorHealth(context.Context) error {
	return errors.New("the testbed runs no Ray Serve")
}

// dashboards is the state of every testbed dashboard: the jobs submitted to each cluster.
type dashboards struct {
	client client.Client
	mu     sync.Mutex
	jobs   map[string]*job // by namespace/cluster/jobID
}

// job is a submitted Ray job; succeeded is sticky once seen.
type job struct {
	info      utiltypes.RayJobInfo
	succeeded bool
}

func newDashboards(c client.Client) *dashboards {
	return &dashboards{client: c, jobs: map[string]*job{}}
}

// dashboard is the testbed dashboard of one RayCluster.
type dashboard struct {
	all                *dashboards
	namespace, cluster string
}

var _ dashboardclient.RayDashboardClientInterface = (*dashboard)(nil)

func (d *dashboard) key(id string) string { return d.namespace + "/" + d.cluster + "/" + id }

func (d *dashboard) InitClient(*http.Client, string) {}

// SubmitJob records the job under the submission id KubeRay chose (status.jobId).
func (d *dashboard) SubmitJob(_ context.Context, rj *rayv1.RayJob) (string, error) {
	id := rj.Status.JobId
	if id == "" {
		return "", errors.New("the RayJob has no job id yet")
	}
	d.all.mu.Lock()
	defer d.all.mu.Unlock()
	if _, ok := d.all.jobs[d.key(id)]; !ok {
		d.all.jobs[d.key(id)] = &job{info: utiltypes.RayJobInfo{
			JobId: id, SubmissionId: id, Entrypoint: rj.Spec.Entrypoint, Metadata: rj.Spec.Metadata,
			JobStatus: rayv1.JobStatusRunning, StartTime: uint64(time.Now().UnixMilli()),
		}}
	}
	return id, nil
}

func (d *dashboard) SubmitJobReq(context.Context, *utiltypes.RayJobRequest) (string, error) {
	return "", errors.New("the testbed dashboard takes submissions of RayJobs only")
}

// GetJobInfo reports a submitted job RUNNING until every GPU pod of the cluster (the pods the
// PickyMan operator placed and the agent simulates) reports its last epoch done, then
// SUCCEEDED (and so from then on). A job it
// was not given is a BadRequest, as the Ray dashboard answers, which makes KubeRay submit it
// in HTTPMode.
func (d *dashboard) GetJobInfo(ctx context.Context, id string) (*utiltypes.RayJobInfo, error) {
	d.all.mu.Lock()
	j, ok := d.all.jobs[d.key(id)]
	d.all.mu.Unlock()
	if !ok {
		return nil, apierrors.NewBadRequest("job " + id + " not found")
	}
	if !j.succeeded {
		done, err := d.trainingDone(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			d.all.mu.Lock()
			j.succeeded = true
			j.info.JobStatus = rayv1.JobStatusSucceeded
			j.info.EndTime = uint64(time.Now().UnixMilli())
			d.all.mu.Unlock()
		}
	}
	d.all.mu.Lock()
	defer d.all.mu.Unlock()
	info := j.info
	return &info, nil
}

// trainingDone says whether the cluster has GPU pods and every one of them reports all its
// epochs done (the agent's progress annotation against the job's epochs annotation).
func (d *dashboard) trainingDone(ctx context.Context) (bool, error) {
	var pods corev1.PodList
	if err := d.all.client.List(ctx, &pods, client.InNamespace(d.namespace), client.MatchingLabels{utils.RayClusterLabelKey: d.cluster}); err != nil {
		return false, err
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, placed := p.Labels[allocationLabel]; !placed || p.DeletionTimestamp != nil {
			continue
		}
		n++
		epochs, err := strconv.Atoi(p.Annotations[epochsAnnotation])
		if err != nil || epochs <= 0 {
			return false, nil
		}
		var progress struct {
			EpochsDone int `json:"epochsDone"`
		}
		if err := json.Unmarshal([]byte(p.Annotations[progressAnnotation]), &progress); err != nil || progress.EpochsDone < epochs {
			return false, nil
		}
	}
	return n > 0, nil
}

func (d *dashboard) ListJobs(context.Context) (*[]utiltypes.RayJobInfo, error) {
	d.all.mu.Lock()
	defer d.all.mu.Unlock()
	prefix := d.namespace + "/" + d.cluster + "/"
	var out []utiltypes.RayJobInfo
	for k, j := range d.all.jobs {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out = append(out, j.info)
		}
	}
	return &out, nil
}

func (d *dashboard) GetJobLog(context.Context, string) (*string, error) {
	s := "the testbed simulates the training; its progress is in the pods' " + progressAnnotation + " annotations"
	return &s, nil
}

// StopJob marks the job STOPPED, as Ray does on a stop request.
func (d *dashboard) StopJob(_ context.Context, id string) error {
	d.all.mu.Lock()
	defer d.all.mu.Unlock()
	if j, ok := d.all.jobs[d.key(id)]; ok && !rayv1.IsJobTerminal(j.info.JobStatus) {
		j.info.JobStatus = rayv1.JobStatusStopped
	}
	return nil
}

func (d *dashboard) DeleteJob(_ context.Context, id string) error {
	d.all.mu.Lock()
	defer d.all.mu.Unlock()
	delete(d.all.jobs, d.key(id))
	return nil
}

func (d *dashboard) UpdateDeployments(context.Context, []byte) error {
	return errors.New("the testbed runs no Ray Serve")
}

func (d *dashboard) GetServeDetails(context.Context) (*utiltypes.ServeDetails, error) {
	return nil, errors.New("the testbed runs no Ray Serve")
}

func (d *dashboard) GetMultiApplicationStatus(context.Context) (map[string]*utiltypes.ServeApplicationStatus, error) {
	return nil, errors.New("the testbed runs no Ray Serve")
}
