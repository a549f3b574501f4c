package cluster

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickyman/pickyman/testbed/storage"
)

// The dataset store runs as a component of the cluster: started with its datasets, its URL
// and process in the status, started once, and stopped by Down with nothing left.
func TestStorageComponent(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "pickyman"), "github.com/pickyman/pickyman/testbed/cmd/pickyman")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pickyman: %v\n%s", err, out)
	}
	o := Options{Name: "storagetest", Home: t.TempDir(), BinDir: bin, Timeout: time.Minute,
		Storage: &Storage{Datasets: []storage.Dataset{{Name: "train.bin", Size: 1 << 20, Rate: 64 << 20}, {Name: "val.bin", Size: 4096}}}}
	if err := os.MkdirAll(o.Workdir(), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Down(context.Background(), o) })
	if _, err := o.StorageURL("train.bin"); err == nil {
		t.Fatal("StorageURL before the store started: no error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := o.startStorage(ctx); err != nil {
		t.Fatal(err)
	}
	pid := readPid(o.storageFile("pid"))
	if err := o.startStorage(ctx); err != nil || readPid(o.storageFile("pid")) != pid {
		t.Fatalf("a second start: %v, pid %d -> %d; want the running store kept", err, pid, readPid(o.storageFile("pid")))
	}

	url, err := o.StorageURL("train.bin")
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("StorageURL = %q, %v; want the loopback address without real nodes", url, err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, _ := os.ReadFile(filepath.Join(o.StorageDir(), "train.bin"))
	if resp.StatusCode != http.StatusOK || len(got) != 1<<20 || !bytes.Equal(got, want) {
		t.Fatalf("GET %s: %d, %d bytes; want 200 and the 1 MiB dataset", url, resp.StatusCode, len(got))
	}

	s, err := GetStatus(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Processes[StorageComponent]; !p.Alive || p.Pid != pid || len(p.Ports) != 1 {
		t.Errorf("status of %s: %+v; want pid %d running with one port", StorageComponent, p, pid)
	}
	if s.StorageURL != strings.TrimSuffix(url, "train.bin") {
		t.Errorf("status storage URL %q; want %q", s.StorageURL, strings.TrimSuffix(url, "train.bin"))
	}

	if err := Down(ctx, o); err != nil {
		t.Fatalf("down: %v", err)
	}
	if alive(pid) {
		t.Errorf("the store (pid %d) runs after down", pid)
	}
}

// A store that cannot start says so, with its log.
func TestStorageComponentFailsWithItsLog(t *testing.T) {
	bin := t.TempDir()
	// A stand-in that exits at once, as a pickyman without the storage command would.
	if err := os.WriteFile(filepath.Join(bin, "pickyman"), []byte("#!/bin/sh\necho 'Error: unknown command \"storage\"' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{Name: "storagefail", Home: t.TempDir(), BinDir: bin, Timeout: 30 * time.Second, Storage: &Storage{}}
	if err := os.MkdirAll(o.Workdir(), 0o755); err != nil {
		t.Fatal(err)
	}
	err := o.startStorage(context.Background())
	if err == nil || !strings.Contains(err.Error(), "component storage not ready") || !strings.Contains(err.Error(), `unknown command "storage"`) {
		t.Fatalf("start: %v; want not ready, with the log's line", err)
	}
	if _, err := o.StorageURL("x"); err == nil {
		t.Error("StorageURL of a store that exited: no error")
	}
}
