package traces

import (
	"errors"
	"io"
	"os"
	"testing"
)

// BenchmarkReadPhilly streams all of philly.csv (82,247 jobs; two passes, the first finding
// the earliest timestamp) with synthesis. Run:
//
//	go test -run '^$' -bench ReadPhilly -benchmem ./traces
func BenchmarkReadPhilly(b *testing.B) {
	path := tracePath(b, "philly-adaptdl/philly.csv")
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open(path, Options{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		r.Close()
		if n != 82247 {
			b.Fatalf("%d jobs", n)
		}
	}
}

// BenchmarkReadAllPhilly is ReadAll: the stream plus the arrival-order sort.
func BenchmarkReadAllPhilly(b *testing.B) {
	path := tracePath(b, "philly-adaptdl/philly.csv")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadAll(path, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerateDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Generate(DefaultGenerateConfig())
	}
}
