package controller

import (
	"context"
	"errors"
	"math"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/allocation"
	"github.com/pickyman/pickyman/operator/pkg/profile"
)

// scorePrediction observes the relative error of the execution-time prediction the model's
// profile gave for a finished job: the trusted fit's epoch time at the job's allocation times
// its epochs, against the time it held its GPUs.
func (r *JobReconciler) scorePrediction(a *v1alpha1.Allocation) {
	gpus := allocation.GPUs(a)
	if r.Profiles == nil || a.Spec.Model == "" || a.Spec.Epochs <= 0 || gpus <= 0 || a.Status.AttainedGPUSeconds <= 0 {
		return
	}
	p, err := r.Profiles.Get(a.Spec.Model)
	if err != nil {
		return
	}
	f := profile.FitSamples(p.Samples, profile.DefaultFitConfig())
	if !f.Trusted {
		return
	}
	predicted := f.At(gpus).Seconds() * float64(a.Spec.Epochs)
	actual := float64(a.Status.AttainedGPUSeconds) / float64(gpus)
	r.Metrics.PredictionError.Observe(math.Abs(predicted-actual) / actual)
}

// recordProfile adds what a finished job showed (its epoch time at its allocation) to its
// model's profile. Failures are logged: a lost sample only delays a trusted fit.
func (r *JobReconciler) recordProfile(ctx context.Context, a *v1alpha1.Allocation, prog allocation.PodProgress) {
	if r.Profiles == nil || a.Spec.Model == "" || prog.EpochTime <= 0 {
		return
	}
	p, err := r.Profiles.Get(a.Spec.Model)
	switch {
	case errors.Is(err, profile.ErrNotFound):
		p = profile.Profile{Model: a.Spec.Model}
	case err != nil:
		log.FromContext(ctx).Error(err, "model profile not updated", "model", a.Spec.Model)
		return
	}
	p.Add(profile.Sample{
		JobID:           allocation.JobID(a),
		GPUs:            allocation.GPUs(a),
		EpochTime:       prog.EpochTime,
		Epochs:          prog.EpochsDone,
		DatasetBytes:    a.Spec.DatasetBytes,
		CheckpointBytes: a.Spec.CheckpointBytes,
	}, 0)
	if err := r.Profiles.Update(p); err != nil {
		log.FromContext(ctx).Error(err, "model profile not updated", "model", a.Spec.Model)
	}
}
