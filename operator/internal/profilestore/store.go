package profilestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/operator/pkg/profile"
)

// Store is a profile.Store backed by ModelProfile objects.
type Store struct {
	c     client.Client
	clock clock.PassiveClock
	// Timeout bounds each API call.
	Timeout time.Duration
	// Fit says when a fit is trusted.
	Fit profile.FitConfig
}

var _ profile.Store = (*Store)(nil)

// New returns a store that reads and writes through c.
func New(c client.Client, clk clock.PassiveClock) *Store {
	return &Store{c: c, clock: clk, Timeout: 10 * time.Second, Fit: profile.DefaultFitConfig()}
}

// ObjectName is the ModelProfile name of a model: the model name if it is a valid object
// name, else a sanitized form with a hash suffix that keeps distinct models apart.
func ObjectName(model string) string {
	if len(validation.IsDNS1123Subdomain(model)) == 0 {
		return model
	}
	var b strings.Builder
	for _, r := range strings.ToLower(model) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r == '-' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > 200 {
		s = s[:200]
	}
	sum := sha256.Sum256([]byte(model))
	return strings.Trim(s+"-"+hex.EncodeToString(sum[:4]), "-")
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.Timeout)
}

// Get returns the profile of a model.
func (s *Store) Get(model string) (profile.Profile, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var mp v1alpha1.ModelProfile
	if err := s.c.Get(ctx, types.NamespacedName{Name: ObjectName(model)}, &mp); err != nil {
		if apierrors.IsNotFound(err) {
			return profile.Profile{}, fmt.Errorf("model %q: %w", model, profile.ErrNotFound)
		}
		return profile.Profile{}, err
	}
	return FromObject(&mp), nil
}

// List returns every profile, sorted by model.
func (s *Store) List() ([]profile.Profile, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var list v1alpha1.ModelProfileList
	if err := s.c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := make([]profile.Profile, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, FromObject(&list.Items[i]))
	}
	slices.SortFunc(out, func(a, b profile.Profile) int { return strings.Compare(a.Model, b.Model) })
	return out, nil
}

// Update creates or replaces the profile of p.Model, with its fit.
func (s *Store) Update(p profile.Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var mp v1alpha1.ModelProfile
	err := s.c.Get(ctx, types.NamespacedName{Name: ObjectName(p.Model)}, &mp)
	if apierrors.IsNotFound(err) {
		mp = v1alpha1.ModelProfile{ObjectMeta: metav1.ObjectMeta{Name: ObjectName(p.Model)}, Spec: v1alpha1.ModelProfileSpec{Model: p.Model}}
		if err := s.c.Create(ctx, &mp); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	s.fill(&mp, p)
	return s.c.Status().Update(ctx, &mp)
}

// fill writes a profile's samples and fit into a ModelProfile's status.
func (s *Store) fill(mp *v1alpha1.ModelProfile, p profile.Profile) {
	now := metav1.NewTime(s.clock.Now())
	mp.Status.Samples = mp.Status.Samples[:0]
	for _, x := range p.Samples {
		mp.Status.Samples = append(mp.Status.Samples, v1alpha1.ProfileSample{
			GPUs:             x.GPUs,
			EpochMillis:      x.EpochTime.Milliseconds(),
			CheckpointMillis: x.CheckpointWriteTime.Milliseconds(),
			ResumeMillis:     x.ResumeTime.Milliseconds(),
			Job:              x.JobID,
		})
	}
	f := profile.FitSamples(p.Samples, s.Fit)
	mp.Status.Fit = &v1alpha1.EpochTimeFit{
		AMillis:         int64(f.A * 1000),
		BMillis:         int64(f.B * 1000),
		Samples:         int32(f.N),
		ResidualPercent: int32(f.RelResidual * 100),
		Trusted:         f.Trusted,
	}
	status, reason := metav1.ConditionFalse, "TooFewSamplesOrPoorFit"
	if f.Trusted {
		status, reason = metav1.ConditionTrue, "FitTrusted"
	}
	apimeta.SetStatusCondition(&mp.Status.Conditions, metav1.Condition{
		Type: "Trusted", Status: status, Reason: reason, LastTransitionTime: now,
		Message: fmt.Sprintf("%d samples, residual %.1f%%", f.N, f.RelResidual*100),
	})
}

// FromObject reads a profile from a ModelProfile.
func FromObject(mp *v1alpha1.ModelProfile) profile.Profile {
	p := profile.Profile{Model: mp.Spec.Model}
	for _, x := range mp.Status.Samples {
		p.Samples = append(p.Samples, profile.Sample{
			JobID:               x.Job,
			GPUs:                x.GPUs,
			EpochTime:           time.Duration(x.EpochMillis) * time.Millisecond,
			CheckpointWriteTime: time.Duration(x.CheckpointMillis) * time.Millisecond,
			ResumeTime:          time.Duration(x.ResumeMillis) * time.Millisecond,
			DatasetBytes:        mp.Spec.DatasetBytes,
			CheckpointBytes:     mp.Spec.CheckpointBytes,
		})
	}
	return p
}
