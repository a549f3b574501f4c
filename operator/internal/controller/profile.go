package controller

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/profile"
)

// recordProfile adds what a finished job showed (its epoch time at its allocation) to its
// model's profile. Failures are logged: a lost sample only delays a trusted fit.
func (o *Operator) recordProfile(ctx context.Context, a *v1alpha1.Allocation, prog PodProgress) {
	if o.Profiles == nil || a.Spec.Model == "" || prog.EpochTime <= 0 {
		return
	}
	p, err := o.Profiles.Get(a.Spec.Model)
	switch {
	case errors.Is(err, profile.ErrNotFound):
		p = profile.Profile{Model: a.Spec.Model}
	case err != nil:
		log.FromContext(ctx).Error(err, "model profile not updated", "model", a.Spec.Model)
		return
	}
	p.Add(profile.Sample{
		JobID:           JobID(a),
		GPUs:            allocGPUs(a),
		EpochTime:       prog.EpochTime,
		Epochs:          prog.EpochsDone,
		DatasetBytes:    a.Spec.DatasetBytes,
		CheckpointBytes: a.Spec.CheckpointBytes,
	}, 0)
	if err := o.Profiles.Update(p); err != nil {
		log.FromContext(ctx).Error(err, "model profile not updated", "model", a.Spec.Model)
	}
}
