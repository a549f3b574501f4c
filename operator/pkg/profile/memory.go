package profile

import (
	"fmt"
	"sort"
	"sync"
)

// Memory is a Store that keeps profiles in memory.
type Memory struct {
	mu       sync.RWMutex
	profiles map[string]Profile
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{profiles: map[string]Profile{}} }

// Get implements Store.
func (m *Memory) Get(model string) (Profile, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.profiles[model]
	if !ok {
		return Profile{}, fmt.Errorf("profile %q: %w", model, ErrNotFound)
	}
	return p.Clone(), nil
}

// Update implements Store.
func (m *Memory) Update(p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.profiles[p.Model] = p.Clone()
	return nil
}

// List implements Store.
func (m *Memory) List() ([]Profile, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Profile, 0, len(m.profiles))
	for _, p := range m.profiles {
		out = append(out, p.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out, nil
}
