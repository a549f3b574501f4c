package profile

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned by Store.Get for a model without a profile.
var ErrNotFound = errors.New("profile: not found")

// Sample is what one training job of a model taught the database. One job contributes one
// sample, keyed by JobID, refined as more of its epochs finish.
type Sample struct {
	JobID string `json:"job"`
	// GPUs is the job's total allocation.
	GPUs int32 `json:"gpus"`
	// EpochTime is the mean observed epoch time at that allocation.
	EpochTime time.Duration `json:"epochTime"`
	// Epochs is how many observed epochs EpochTime averages.
	Epochs int32 `json:"epochs,omitempty"`
	// ResumeTime is the observed resume overhead (start, checkpoint load, warm-up), 0 if the
	// job was never resumed.
	ResumeTime time.Duration `json:"resumeTime,omitempty"`
	// CheckpointWriteTime is the observed checkpoint write time, 0 if not observed.
	CheckpointWriteTime time.Duration `json:"checkpointWriteTime,omitempty"`
	DatasetBytes        int64         `json:"datasetBytes,omitempty"`
	CheckpointBytes     int64         `json:"checkpointBytes,omitempty"`
}

// Profile is everything known about one model.
type Profile struct {
	Model   string   `json:"model"`
	Samples []Sample `json:"samples"`
}

// Store is the model-profile database. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the profile of a model, or an error wrapping ErrNotFound.
	Get(model string) (Profile, error)
	// Update creates or replaces the profile of p.Model.
	Update(p Profile) error
	// List returns every profile, sorted by model name.
	List() ([]Profile, error)
}

// DefaultMaxSamples bounds the samples a profile keeps; the oldest are dropped first.
const DefaultMaxSamples = 64

// Add records s in the profile: it replaces the sample of the same job, or appends it and
// drops the oldest samples beyond max (max <= 0 means DefaultMaxSamples).
func (p *Profile) Add(s Sample, max int) {
	if max <= 0 {
		max = DefaultMaxSamples
	}
	for i := range p.Samples {
		if p.Samples[i].JobID == s.JobID {
			p.Samples[i] = s
			return
		}
	}
	p.Samples = append(p.Samples, s)
	if over := len(p.Samples) - max; over > 0 {
		p.Samples = append(p.Samples[:0:0], p.Samples[over:]...)
	}
}

// Clone returns a deep copy.
func (p Profile) Clone() Profile {
	p.Samples = append([]Sample(nil), p.Samples...)
	return p
}

// Validate reports the first field that makes the profile unusable.
func (p Profile) Validate() error {
	if p.Model == "" {
		return errors.New("profile: empty model name")
	}
	for i, s := range p.Samples {
		switch {
		case s.GPUs <= 0:
			return fmt.Errorf("profile %q: sample %d (job %q): gpus must be positive, got %d", p.Model, i, s.JobID, s.GPUs)
		case s.EpochTime <= 0:
			return fmt.Errorf("profile %q: sample %d (job %q): epochTime must be positive, got %v", p.Model, i, s.JobID, s.EpochTime)
		case s.ResumeTime < 0 || s.CheckpointWriteTime < 0 || s.DatasetBytes < 0 || s.CheckpointBytes < 0:
			return fmt.Errorf("profile %q: sample %d (job %q): negative value", p.Model, i, s.JobID)
		}
	}
	return nil
}
