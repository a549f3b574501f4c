package traces

import (
	"errors"
	"io"
	"time"
)

// Format names a trace format.
type Format string

const (
	FormatTiresias   Format = "tiresias"
	FormatMuri       Format = "muri"
	FormatPhillyJSON Format = "philly-json"
	FormatPhillyCSV  Format = "philly-csv"
	FormatHelios     Format = "helios"
	FormatPAI        Format = "pai"
	FormatOpenB      Format = "openb"
	FormatBlox       Format = "blox"
	// FormatPickyman is the project's own CSV, written by WriteCSV and the generator.
	FormatPickyman Format = "pickyman"
)

// Options control how a trace is read.
type Options struct {
	// Format forces a format; "" detects it from the header or the file's shape.
	Format Format
	// Seed drives the synthesis of missing fields.
	Seed int64
}

// Reader streams the jobs of a trace. Next returns io.EOF after the last job.
type Reader interface {
	Next() (Job, error)
	Format() Format
	Close() error
}

var errNotBuilt = errors.New("traces: not built yet")

// Open opens a trace file, detects (or takes) its format, and returns a reader whose jobs
// have every missing field synthesized from opts.Seed.
func Open(path string, opts Options) (Reader, error) { return nil, errNotBuilt }

// ReadAll reads every job of a trace.
func ReadAll(path string, opts Options) ([]Job, error) { return nil, errNotBuilt }

// NodePool is a set of identical GPU nodes.
type NodePool struct {
	Count    int
	GPUs     int32
	GPUModel string
}

// Cluster is a cluster description.
type Cluster struct {
	Pools []NodePool
	// Source is the spec string or file it came from.
	Source string
}

// ParseCluster reads "NODESxGPUS[:MODEL]" (pools joined by ",") or a cluster file.
func ParseCluster(spec string) (Cluster, error) { return Cluster{}, errNotBuilt }

// GenerateConfig parameterizes the synthetic trace generator.
type GenerateConfig struct {
	Jobs int
	Seed int64
	// Span is the arrival window.
	Span time.Duration
}

// DefaultGenerateConfig is the main job's default trace.
func DefaultGenerateConfig() GenerateConfig { return GenerateConfig{Jobs: 2000, Seed: 1} }

// Generate returns a synthetic trace.
func Generate(cfg GenerateConfig) []Job { return nil }

// WriteCSV writes jobs in FormatPickyman.
func WriteCSV(w io.Writer, jobs []Job) error { return errNotBuilt }
