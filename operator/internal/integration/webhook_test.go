//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
)

// The validating webhook rejects bad jobs naming the field and the reason; the mutating
// webhook suspends new jobs and leaves unmanaged ones alone.
func TestWebhooks(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "wh-a")
	startOperator(t, testConfig("fifo"))
	ctx := context.Background()

	rejected := map[string]struct {
		job  *kftraining.PyTorchJob
		want []string
	}{
		"no gpu limit": {
			job:  utiltesting.MakePyTorchJob("nogpu", ns).Workers(1, -1).Obj(),
			want: []string{"spec.pytorchReplicaSpecs[Worker]", "nvidia.com/gpu", "GPU limit"},
		},
		"fits no node": {
			job:  utiltesting.MakePyTorchJob("huge", ns).Master(16).Obj(),
			want: []string{"spec.pytorchReplicaSpecs[Master]", "fits on no node", "8 GPUs"},
		},
		"unknown queue": {
			job:  utiltesting.MakePyTorchJob("q", ns).Queue("nope").Obj(),
			want: []string{"metadata.labels[pickyman.dev/queue]", `"nope"`},
		},
	}
	for name, tc := range rejected {
		t.Run(name, func(t *testing.T) {
			err := k8s.Create(ctx, tc.job)
			if err == nil {
				t.Fatal("created, want rejected")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}

	t.Run("managed job is created suspended", func(t *testing.T) {
		job := utiltesting.MakePyTorchJob("ok", ns).Master(8).Suspend(false).Obj()
		if err := k8s.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		tmpl := job.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template
		if job.Spec.RunPolicy.Suspend == nil || !*job.Spec.RunPolicy.Suspend {
			t.Errorf("suspend %v, want true at creation", job.Spec.RunPolicy.Suspend)
		}
		if tmpl.Spec.SchedulerName != v1alpha1.SchedulerName || tmpl.Labels[v1alpha1.LabelAllocation] != "pytorchjob-ok" {
			t.Errorf("template scheduler %q label %q", tmpl.Spec.SchedulerName, tmpl.Labels[v1alpha1.LabelAllocation])
		}
	})

	t.Run("unmanaged job is left alone", func(t *testing.T) {
		job := utiltesting.MakePyTorchJob("free", ns).Queue("").Workers(1, -1).Obj()
		if err := k8s.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		if (job.Spec.RunPolicy.Suspend != nil && *job.Spec.RunPolicy.Suspend) || job.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeMaster].Template.Spec.SchedulerName != "" {
			t.Error("unmanaged job was mutated")
		}
	})

	t.Run("admitted job keeps its gang shape and queue", func(t *testing.T) {
		waitPhase(t, ns, "ok", v1alpha1.AllocationAdmitted, 20*time.Second)
		for name, edit := range map[string]func(j *kftraining.PyTorchJob){
			"workers": func(j *kftraining.PyTorchJob) {
				j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker] = utiltesting.MakePyTorchJob("x", ns).Workers(2, 8).Obj().Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker]
			},
			"queue": func(j *kftraining.PyTorchJob) { j.Labels[v1alpha1.LabelQueue] = "high" },
		} {
			// The operator writes the job too (it resumes it): a conflict is read again.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				job := &kftraining.PyTorchJob{}
				if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ok"}, job); err != nil {
					return err
				}
				edit(job)
				return k8s.Update(ctx, job)
			})
			if err == nil || !strings.Contains(err.Error(), "admitted job cannot change") {
				t.Errorf("%s edit: error %v, want a rejection", name, err)
			}
		}
	})
}

// With no operator serving, the webhooks' selectors decide: a job without a queue label is
// created untouched (the API server never calls PickyMan for it), and a managed one is
// refused, with a message that names PickyMan's webhook and why it failed.
func TestWebhooksWithOperatorDown(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()

	unmanaged := utiltesting.MakePyTorchJob("unmanaged", ns).Master(8).Obj()
	delete(unmanaged.Labels, v1alpha1.LabelQueue)
	if err := k8s.Create(ctx, unmanaged); err != nil {
		t.Fatalf("unmanaged PyTorchJob refused with the operator down: %v", err)
	}
	got := &kftraining.PyTorchJob{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(unmanaged), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.RunPolicy.Suspend != nil && *got.Spec.RunPolicy.Suspend {
		t.Errorf("unmanaged PyTorchJob was suspended")
	}
	// An update of the unmanaged job is not PickyMan's business either.
	got.Annotations = map[string]string{"example.com/owner": "team-a"}
	if err := k8s.Update(ctx, got); err != nil {
		t.Errorf("update of an unmanaged PyTorchJob refused with the operator down: %v", err)
	}

	managed := utiltesting.MakePyTorchJob("managed", ns).Master(8).Obj()
	err := k8s.Create(ctx, managed)
	if err == nil {
		t.Fatal("managed PyTorchJob created with no operator serving its webhooks")
	}
	for _, want := range []string{"pytorchjob.pickyman.dev", "failed calling webhook"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}

// The scale subresource of a managed PyTorchJob is refused (a Scale carries none of the job's
// labels, so its webhook has no object selector); an unmanaged job scales as before. An
// update that takes the socket mount's read-only flag away is refused by the real webhook.
func TestWebhookScaleAndTemplates(t *testing.T) {
	ns := newNamespace(t)
	makeNodes(t, 8, "whs-a")
	startOperator(t, testConfig("fifo"))
	ctx := context.Background()

	managed := utiltesting.MakePyTorchJob("managed", ns).Master(4).Workers(1, 4).Obj()
	plain := utiltesting.MakePyTorchJob("plain", ns).Queue("").Master(4).Workers(1, 4).Obj()
	for _, j := range []*kftraining.PyTorchJob{managed, plain} {
		if err := k8s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	scale := func(j *kftraining.PyTorchJob) error {
		s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
		return k8s.SubResource("scale").Update(ctx, j, client.WithSubResourceBody(s))
	}
	err := scale(managed)
	if err == nil || !strings.Contains(err.Error(), "spec.replicas") || !strings.Contains(err.Error(), "managed by PickyMan") {
		t.Fatalf("scaling a managed job: %v, want refused naming spec.replicas", err)
	}
	if err := scale(plain); err != nil {
		t.Fatalf("scaling an unmanaged job: %v", err)
	}

	eventually(t, 10*time.Second, func() error {
		j := &kftraining.PyTorchJob{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(managed), j); err != nil {
			return err
		}
		c := &j.Spec.PyTorchReplicaSpecs[kftraining.PyTorchJobReplicaTypeWorker].Template.Spec.Containers[0]
		for k := range c.VolumeMounts {
			c.VolumeMounts[k].ReadOnly = false
		}
		err := k8s.Update(ctx, j)
		if err == nil {
			return errors.New("a read-write socket mount was accepted")
		}
		if !strings.Contains(err.Error(), "volumeMounts") || !strings.Contains(err.Error(), "read-only") {
			return fmt.Errorf("refused for another reason: %w", err) // a conflict: read again
		}
		return nil
	})
}
