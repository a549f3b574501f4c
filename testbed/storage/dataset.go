package storage

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Dataset is one generated object of the store: its key, its size and the pace at which one
// reader gets it.
type Dataset struct {
	// Name is the object's key: letters, digits, '.', '_' and '-', not ending in ".tmp".
	Name string
	// Size in bytes, at most MaxObjectBytes.
	Size int64
	// Rate paces each response of the object to at most this many bytes per second; 0 leaves
	// it to the server's default.
	Rate float64
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)

// ValidKey says why key cannot name an object, or nil: it is one path segment of letters,
// digits, '.', '_' and '-', neither "." nor "..", and not ending in ".tmp" (Generate's
// temporary files).
func ValidKey(key string) error {
	switch {
	case !keyPattern.MatchString(key):
		return fmt.Errorf("object key %q: want 1 to 200 letters, digits, '.', '_' or '-'", key)
	case key == "." || key == "..":
		return fmt.Errorf("object key %q: not a file name", key)
	case strings.HasSuffix(key, ".tmp"):
		return fmt.Errorf("object key %q: the suffix .tmp is kept for files being written", key)
	}
	return nil
}

// ParseDataset parses NAME=SIZE[@RATE]: SIZE in bytes and RATE in bytes per second, each a
// Kubernetes quantity ("40Mi", "1Gi", "500k"), as `pickyman storage serve --dataset` and
// `pickyman cluster up --dataset` take it.
func ParseDataset(spec string) (Dataset, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return Dataset{}, fmt.Errorf("dataset %q: want NAME=SIZE[@RATE], e.g. imagenet-mini=256Mi@8Mi", spec)
	}
	if err := ValidKey(name); err != nil {
		return Dataset{}, fmt.Errorf("dataset %q: %w", spec, err)
	}
	size, rate, paced := strings.Cut(rest, "@")
	d := Dataset{Name: name}
	var err error
	if d.Size, err = quantity(size, MaxObjectBytes); err != nil {
		return Dataset{}, fmt.Errorf("dataset %q: size: %w", spec, err)
	}
	if paced {
		r, err := quantity(rate, 1<<40)
		if err != nil {
			return Dataset{}, fmt.Errorf("dataset %q: rate: %w", spec, err)
		}
		if r == 0 {
			return Dataset{}, fmt.Errorf("dataset %q: rate: must be positive (leave out @RATE for the server's default)", spec)
		}
		d.Rate = float64(r)
	}
	return d, nil
}

// ParseRate parses a pace in bytes per second, a Kubernetes quantity; 0 is unpaced.
func ParseRate(s string) (float64, error) {
	r, err := quantity(s, 1<<40)
	return float64(r), err
}

// quantity parses a whole non-negative Kubernetes quantity of at most max.
func quantity(s string, max int64) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity (e.g. 64Mi, 1Gi, 500k): %w", s, err)
	}
	v, ok := q.AsInt64()
	if !ok || v < 0 || v > max {
		return 0, fmt.Errorf("%q: want a whole number of bytes from 0 to %d", s, max)
	}
	return v, nil
}

// Seed is the dataset's generator seed, from its name: the same name and size give the same
// bytes on every machine.
func (d Dataset) Seed() int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(d.Name))
	return int64(h.Sum64() >> 1)
}

// Prepare generates each dataset in dir that is missing or has another size; objects of the
// right size are kept as they are.
func Prepare(dir string, datasets []Dataset) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range datasets {
		if err := ValidKey(d.Name); err != nil {
			return err
		}
		path := filepath.Join(dir, d.Name)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == d.Size {
			continue
		}
		if err := Generate(path, d.Size, d.Seed()); err != nil {
			return fmt.Errorf("dataset %s: %w", d.Name, err)
		}
	}
	return nil
}

// Rates are the datasets' own paces by key, for Server.Rates.
func Rates(datasets []Dataset) map[string]float64 {
	out := map[string]float64{}
	for _, d := range datasets {
		if d.Rate > 0 {
			out[d.Name] = d.Rate
		}
	}
	return out
}
