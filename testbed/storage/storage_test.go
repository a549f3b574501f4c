package storage

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func serve(t *testing.T, s *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, s) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

func get(t *testing.T, url, rng string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestGenerateIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, x := range []struct {
		path string
		seed int64
	}{{a, 1}, {b, 1}, {c, 2}} {
		if err := Generate(x.path, 3<<20+5, x.seed); err != nil {
			t.Fatal(err)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	dc, _ := os.ReadFile(c)
	if len(da) != 3<<20+5 {
		t.Fatalf("size %d, want %d", len(da), 3<<20+5)
	}
	if !bytes.Equal(da, db) {
		t.Error("the same seed gave different bytes")
	}
	if bytes.Equal(da, dc) {
		t.Error("another seed gave the same bytes")
	}
	if err := Generate(filepath.Join(dir, "d"), -1, 1); err == nil {
		t.Error("a negative size was accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.tmp")); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestServesObjectsAndRanges(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(filepath.Join(dir, "train.bin"), 1<<20, 7); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "train.bin"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: dir}
	url := serve(t, s)

	code, body := get(t, url+"/train.bin", "")
	if code != http.StatusOK || !bytes.Equal(body, want) {
		t.Errorf("whole object: status %d, %d bytes, equal %v", code, len(body), bytes.Equal(body, want))
	}
	code, body = get(t, url+"/train.bin", "bytes=1000-1999")
	if code != http.StatusPartialContent || !bytes.Equal(body, want[1000:2000]) {
		t.Errorf("range: status %d, %d bytes", code, len(body))
	}
	for _, key := range []string{"/missing", "/sub", "/", "/../storage.go", "/%2e%2e%2fstorage.go"} {
		if code, _ := get(t, url+key, ""); code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", key, code)
		}
	}
	resp, err := http.Post(url+"/train.bin", "application/octet-stream", bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", resp.StatusCode)
	}
	if got := s.Sent(); got != 1<<20+1000 {
		t.Errorf("Sent %d, want %d", got, 1<<20+1000)
	}
}

// TestPacesResponses: a paced response takes at least its size over the rate (a lower
// bound only: a loaded machine makes it slower, never faster).
func TestPacesResponses(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(filepath.Join(dir, "x"), 512<<10, 1); err != nil {
		t.Fatal(err)
	}
	const rate = 2 << 20 // 2 MiB/s: 512 KiB takes at least 250 ms, less the first chunk
	url := serve(t, &Server{Dir: dir, Rate: rate})
	start := time.Now()
	code, body := get(t, url+"/x", "")
	took := time.Since(start)
	if code != http.StatusOK || len(body) != 512<<10 {
		t.Fatalf("status %d, %d bytes", code, len(body))
	}
	if min := time.Duration(float64(512<<10-paceChunk) / rate * float64(time.Second)); took < min {
		t.Errorf("512 KiB at %d B/s in %v, want at least %v", rate, took, min)
	}
}
