package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testProfiles() []Profile {
	return []Profile{
		{Model: "resnet50", Samples: []Sample{
			{JobID: "j1", GPUs: 4, EpochTime: 90 * time.Second, Epochs: 3, ResumeTime: 40 * time.Second,
				CheckpointWriteTime: 2 * time.Second, DatasetBytes: 150 << 30, CheckpointBytes: 100 << 20},
		}},
		{Model: "bert", Samples: []Sample{{JobID: "j2", GPUs: 8, EpochTime: time.Hour}}},
	}
}

func TestStores(t *testing.T) {
	stores := map[string]func(t *testing.T) Store{
		"memory": func(t *testing.T) Store { return NewMemory() },
		"file": func(t *testing.T) Store {
			f, err := OpenFile(filepath.Join(t.TempDir(), "profiles.json"))
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			if _, err := s.Get("resnet50"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get on empty store: err = %v, want ErrNotFound", err)
			}
			for _, p := range testProfiles() {
				if err := s.Update(p); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Get("resnet50")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(testProfiles()[0], got); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
			list, err := s.List()
			if err != nil {
				t.Fatal(err)
			}
			want := []Profile{testProfiles()[1], testProfiles()[0]}
			if diff := cmp.Diff(want, list); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if err := s.Update(Profile{Model: "x", Samples: []Sample{{JobID: "j", GPUs: 0, EpochTime: 1}}}); err == nil {
				t.Error("Update accepted a sample with 0 GPUs")
			}
		})
	}
}

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range testProfiles() {
		if err := f.Update(p); err != nil {
			t.Fatal(err)
		}
	}
	again, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := again.List()
	want, _ := f.List()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reopened database (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files after updates, want only the database (no temporaries)", len(entries))
	}
}

func TestFileCorrupt(t *testing.T) {
	tests := map[string]struct {
		content string
		wantErr string
	}{
		"not json":         {content: `{"version": 1, "profiles": [`, wantErr: "is not a valid profile database"},
		"unknown field":    {content: `{"version": 1, "profile": []}`, wantErr: "unknown field"},
		"wrong version":    {content: `{"version": 7, "profiles": []}`, wantErr: "has version 7"},
		"invalid sample":   {content: `{"version": 1, "profiles": [{"model": "m", "samples": [{"job": "j", "gpus": -1, "epochTime": 5}]}]}`, wantErr: "gpus must be positive"},
		"duplicate model":  {content: `{"version": 1, "profiles": [{"model": "m", "samples": []}, {"model": "m", "samples": []}]}`, wantErr: "appears twice"},
		"empty model name": {content: `{"version": 1, "profiles": [{"model": "", "samples": []}]}`, wantErr: "empty model name"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profiles.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenFile(path)
			if err == nil {
				t.Fatal("OpenFile accepted a corrupt database")
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q should name the file and contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestFileMissingIsEmpty(t *testing.T) {
	f, err := OpenFile(filepath.Join(t.TempDir(), "absent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := f.List(); len(l) != 0 {
		t.Errorf("List = %v, want empty", l)
	}
}
