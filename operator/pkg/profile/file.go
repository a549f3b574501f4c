package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// fileVersion is the version of the file format written by File.
const fileVersion = 1

// fileDoc is the JSON document a File stores. Durations are in nanoseconds.
type fileDoc struct {
	Version  int       `json:"version"`
	Profiles []Profile `json:"profiles"`
}

// File is a Store backed by one JSON file. Every Update rewrites the file atomically: it
// writes a temporary file in the same directory, syncs it and renames it over the old one,
// so a crash leaves either the old or the new database, never a torn one.
type File struct {
	path string
	mu   sync.Mutex
	mem  *Memory
}

var _ Store = (*File)(nil)

// OpenFile loads the database at path; a missing file is an empty database. A file that is
// not a valid database is an error that names the file and the problem.
func OpenFile(path string) (*File, error) {
	f := &File{path: path, mem: NewMemory()}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("profile: reading %s: %w", path, err)
	}
	var doc fileDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("profile: %s is not a valid profile database: %w", path, err)
	}
	if doc.Version != fileVersion {
		return nil, fmt.Errorf("profile: %s has version %d, want %d", path, doc.Version, fileVersion)
	}
	for _, p := range doc.Profiles {
		if _, err := f.mem.Get(p.Model); err == nil {
			return nil, fmt.Errorf("profile: %s: model %q appears twice", path, p.Model)
		}
		if err := f.mem.Update(p); err != nil {
			return nil, fmt.Errorf("profile: %s: %w", path, err)
		}
	}
	return f, nil
}

// Path is the file the store writes.
func (f *File) Path() string { return f.path }

// Get implements Store.
func (f *File) Get(model string) (Profile, error) { return f.mem.Get(model) }

// List implements Store.
func (f *File) List() ([]Profile, error) { return f.mem.List() }

// Update implements Store: it validates p, then writes the whole database atomically.
func (f *File) Update(p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	old, err := f.mem.Get(p.Model)
	existed := err == nil
	if err := f.mem.Update(p); err != nil {
		return err
	}
	if err := f.write(); err != nil {
		if existed {
			_ = f.mem.Update(old)
		} else {
			f.mem.mu.Lock()
			delete(f.mem.profiles, p.Model)
			f.mem.mu.Unlock()
		}
		return err
	}
	return nil
}

func (f *File) write() error {
	all, _ := f.mem.List()
	data, err := json.MarshalIndent(fileDoc{Version: fileVersion, Profiles: all}, "", "  ")
	if err != nil {
		return fmt.Errorf("profile: encoding: %w", err)
	}
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("profile: writing %s: %w", f.path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("profile: writing %s: %w", f.path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("profile: writing %s: %w", f.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("profile: writing %s: %w", f.path, err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("profile: writing %s: %w", f.path, err)
	}
	return nil
}
