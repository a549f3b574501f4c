package profile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzOpenFile feeds arbitrary bytes to OpenFile: it must never panic, and a database it
// accepts must survive a write and a reopen unchanged.
func FuzzOpenFile(f *testing.F) {
	f.Add([]byte(`{"version": 1, "profiles": [{"model": "m", "samples": [{"job": "j", "gpus": 2, "epochTime": 5000000000}]}]}`))
	f.Add([]byte(`{"version": 1, "profiles": []}`))
	f.Add([]byte(`{"version": 1, "profiles": [`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "p.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := OpenFile(path)
		if err != nil {
			return
		}
		want, _ := db.List()
		if len(want) == 0 {
			return
		}
		if err := db.Update(want[0]); err != nil {
			t.Fatalf("Update of a profile the file held: %v", err)
		}
		again, err := OpenFile(path)
		if err != nil {
			t.Fatalf("reopening a database just written: %v", err)
		}
		got, _ := again.List()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
