package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseDataset(t *testing.T) {
	for _, c := range []struct {
		spec string
		want Dataset
	}{
		{"a=40Mi", Dataset{Name: "a", Size: 40 << 20}},
		{"io-bound.bin=40Mi@4Mi", Dataset{Name: "io-bound.bin", Size: 40 << 20, Rate: 4 << 20}},
		{"x_1=1000@500k", Dataset{Name: "x_1", Size: 1000, Rate: 500e3}},
		{"empty=0", Dataset{Name: "empty"}},
	} {
		got, err := ParseDataset(c.spec)
		if err != nil || got != c.want {
			t.Errorf("ParseDataset(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"a", "want NAME=SIZE"},
		{"=1Mi", "object key"},
		{"../x=1Mi", "object key"},
		{"a/b=1Mi", "object key"},
		{"..=1Mi", "not a file name"},
		{"a.tmp=1Mi", ".tmp"},
		{"a=lots", "size: \"lots\" is not a quantity"},
		{"a=-1", "size: \"-1\": want a whole number"},
		{"a=1.5", "size: \"1.5\": want a whole number"},
		{"a=17Gi", "size: \"17Gi\": want a whole number"},
		{"a=1Mi@", "rate: \"\" is not a quantity"},
		{"a=1Mi@0", "rate: must be positive"},
	} {
		_, err := ParseDataset(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDataset(%q) = %v; want an error containing %q", c.spec, err, c.want)
		}
	}
}

func TestPrepareGeneratesMissingAndKeepsTheRest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ds := []Dataset{{Name: "a", Size: 3 << 20}, {Name: "b", Size: 1000}}
	if err := Prepare(dir, ds); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(dir, "a"))
	if err != nil || len(a) != 3<<20 {
		t.Fatalf("a: %d bytes, %v", len(a), err)
	}
	// The same name and size give the same bytes: another directory, the same object.
	other := t.TempDir()
	if err := Prepare(other, ds[:1]); err != nil {
		t.Fatal(err)
	}
	if a2, _ := os.ReadFile(filepath.Join(other, "a")); !bytes.Equal(a, a2) {
		t.Fatal("the same dataset generated twice differs")
	}
	// An object of the right size is kept; one of another size is generated again.
	old := time.Now().Add(-time.Hour)
	for _, n := range []string{"a", "b"} {
		if err := os.Chtimes(filepath.Join(dir, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	ds[1].Size = 2000
	if err := Prepare(dir, ds); err != nil {
		t.Fatal(err)
	}
	sa, _ := os.Stat(filepath.Join(dir, "a"))
	sb, _ := os.Stat(filepath.Join(dir, "b"))
	if !sa.ModTime().Equal(old) {
		t.Error("a, of the right size, was written again")
	}
	if sb.Size() != 2000 || sb.ModTime().Equal(old) {
		t.Errorf("b: %d bytes, modified %v; want 2000 bytes, written again", sb.Size(), sb.ModTime())
	}
	if err := Prepare(dir, []Dataset{{Name: "../escape", Size: 1}}); err == nil {
		t.Error("Prepare wrote an object whose key leaves the directory")
	}
}

func TestRatesPaceEachObject(t *testing.T) {
	dir := t.TempDir()
	ds := []Dataset{{Name: "slow", Size: 256 << 10, Rate: 1 << 20}, {Name: "fast", Size: 256 << 10}}
	if err := Prepare(dir, ds); err != nil {
		t.Fatal(err)
	}
	url := serve(t, &Server{Dir: dir, Rates: Rates(ds)})
	start := time.Now()
	if code, b := get(t, url+"/slow", ""); code != 200 || len(b) != 256<<10 {
		t.Fatalf("slow: %d, %d bytes", code, len(b))
	}
	// 256 KiB at 1 MiB/s: a quarter of a second at least (the pacing never sends early).
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("slow object served in %v, faster than its 1 MiB/s", d)
	}
	if got := Rates(ds); len(got) != 1 || got["slow"] != 1<<20 {
		t.Errorf("Rates = %v; want only slow's", got)
	}
}
