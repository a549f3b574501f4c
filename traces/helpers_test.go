package traces

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func cmpDiff(want, got any, opts ...cmp.Option) string { return cmp.Diff(want, got, opts...) }

// readRaw reads a trace held in memory with synthesis off, so a test sees exactly what the
// reader took from the trace.
func readRaw(name, content string, opts Options) ([]Job, int, error) {
	r, err := newReader(bytes.NewReader([]byte(content)), name, "", opts)
	if err != nil {
		return nil, 0, err
	}
	r.synth = false
	jobs, err := readAll(r)
	return jobs, r.Skipped(), err
}

// readRawFiles writes files into a temporary folder and reads the first one, raw.
func readRawFiles(t *testing.T, files map[string]string, first string, opts Options) ([]Job, int, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, first)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := newReader(f, first, path, opts)
	if err != nil {
		return nil, 0, err
	}
	r.synth = false
	jobs, err := readAll(r)
	return jobs, r.Skipped(), err
}

// drain reads a reader to the end (the fuzz targets' body).
func drain(r Reader) error {
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// jobBuilder builds expected jobs: job("7").gpus(2).submit(30).dur(120).line(2).obj().
type jobBuilder struct{ j Job }

func job(id string) *jobBuilder { return &jobBuilder{Job{ID: id}} }

func (b *jobBuilder) gpus(n int32) *jobBuilder { b.j.GPUs = n; return b }
func (b *jobBuilder) workers(w, per int32) *jobBuilder {
	b.j.Workers, b.j.GPUsPerWorker = w, per
	return b
}
func (b *jobBuilder) submit(d time.Duration) *jobBuilder { b.j.Submit = d; return b }
func (b *jobBuilder) dur(d time.Duration) *jobBuilder    { b.j.Duration = d; return b }
func (b *jobBuilder) model(m string) *jobBuilder         { b.j.Model = m; return b }
func (b *jobBuilder) queue(q string) *jobBuilder         { b.j.Queue = q; return b }
func (b *jobBuilder) user(u string) *jobBuilder          { b.j.User = u; return b }
func (b *jobBuilder) status(s string) *jobBuilder        { b.j.Status = s; return b }
func (b *jobBuilder) gpuModel(m string) *jobBuilder      { b.j.GPUModel = m; return b }
func (b *jobBuilder) prio(p int32, class string) *jobBuilder {
	b.j.Priority, b.j.PriorityClass = p, class
	return b
}
func (b *jobBuilder) line(n int) *jobBuilder { b.j.Line = n; return b }
func (b *jobBuilder) obj() Job               { return b.j }

const sec = time.Second

func bytesReader(s string) *bytes.Reader { return bytes.NewReader([]byte(s)) }
