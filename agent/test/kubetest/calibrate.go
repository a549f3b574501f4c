package kubetest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CalibrateDir measures dir's write (with fsync) and read bandwidth, in bytes per second,
// for a file of n bytes: what the overhead model's checkpoint bandwidths stand for, as the
// real-training tests compare its predictions with a checkpoint in dir.
func CalibrateDir(t testing.TB, dir string, n int64) (write, read float64) {
	t.Helper()
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	path := filepath.Join(dir, "calibrate.bin")
	t0 := time.Now()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	write = float64(n) / time.Since(t0).Seconds()
	t0 = time.Now()
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	read = float64(n) / time.Since(t0).Seconds()
	_ = os.Remove(path)
	return write, read
}
