// Package storage is the testbed's dataset store: an HTTP object server, as a platform team
// serves training data from an S3-compatible or plain HTTP store, holding datasets that the
// testbed generates. Training pods on a real node read their dataset from it every epoch
// (agent/python/examples/train_ddp.py --data-url), so that the agent measures real storage
// traffic in the pods' network namespaces.
//
// Objects are the regular files of one directory, served with GET and HEAD, byte ranges
// (RFC 9110, as http.ServeContent does: what a data loader uses to read a sample or a shard)
// and ETags. Each response is paced to at most Rate bytes per second, standing in for the
// storage network's share that one reader gets; 0 leaves it unpaced.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// MaxObjectBytes bounds a generated object: 16 GiB.
const MaxObjectBytes = 16 << 30

// Generate writes an object of size bytes to path, pseudo-random from seed (the same seed
// and size give the same bytes), through a temporary file renamed into place.
func Generate(path string, size, seed int64) error {
	if size < 0 || size > MaxObjectBytes {
		return fmt.Errorf("storage: object size %d outside [0, %d]", size, int64(MaxObjectBytes))
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		for i := 0; i < int(n); i += 8 {
			v := r.Uint64()
			for k := 0; k < 8 && i+k < int(n); k++ {
				buf[i+k] = byte(v >> (8 * k))
			}
		}
		if _, err := f.Write(buf[:n]); err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			return err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Server serves the objects of Dir.
type Server struct {
	// Dir holds the objects, one regular file each, named by their key.
	Dir string
	// Rate paces each response to at most this many bytes per second (0: unpaced).
	Rate float64
	// Rates paces the responses of an object by its key instead of Rate (0: unpaced).
	Rates map[string]float64

	sent     atomic.Int64
	requests atomic.Int64
}

// Sent is the body bytes the server has written.
func (s *Server) Sent() int64 { return s.sent.Load() }

// Requests is the number of requests the server has answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// ServeHTTP answers GET and HEAD of an object key; anything else is refused. A key is one
// path segment: no directory is reached through it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/")
	if key == "" || strings.ContainsAny(key, `/\`) || key == "." || key == ".." || strings.HasSuffix(key, ".tmp") {
		http.Error(w, "no such object", http.StatusNotFound)
		return
	}
	f, err := os.Open(filepath.Join(s.Dir, key))
	if err != nil {
		http.Error(w, "no such object", http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, "no such object", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", strconv.Quote(fmt.Sprintf("%x-%x", st.Size(), st.ModTime().UnixNano())))
	w.Header().Set("Content-Type", "application/octet-stream")
	rate, ok := s.Rates[key]
	if !ok {
		rate = s.Rate
	}
	http.ServeContent(&pacedWriter{ResponseWriter: w, rate: rate, start: time.Now(), sent: &s.sent}, r, key, st.ModTime(), f)
}

// pacedWriter writes a response body at most rate bytes per second since start.
type pacedWriter struct {
	http.ResponseWriter
	rate  float64
	start time.Time
	n     int64
	sent  *atomic.Int64
}

// paceChunk is the most a paced write sends at once.
const paceChunk = 32 << 10

func (p *pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		chunk := b
		if p.rate > 0 && len(chunk) > paceChunk {
			chunk = chunk[:paceChunk]
		}
		if p.rate > 0 {
			due := p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		n, err := p.ResponseWriter.Write(chunk)
		written += n
		p.n += int64(n)
		p.sent.Add(int64(n))
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// ReadFrom hides the response's io.ReaderFrom (sendfile), which would bypass the pacing.
func (p *pacedWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.CopyBuffer(writerOnly{p}, r, make([]byte, paceChunk))
}

type writerOnly struct{ io.Writer }

// Serve serves s on l until ctx ends, then shuts the server down.
func Serve(ctx context.Context, l net.Listener, s *Server) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
