package traces

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// Formats lists every format Open reads, in the order detection tries them.
var Formats = []Format{FormatPickyman, FormatMuri, FormatTiresias, FormatPhillyJSON, FormatPhillyCSV,
	FormatHelios, FormatPAI, FormatOpenB, FormatBlox}

// Options control how a trace is read.
type Options struct {
	// Format forces a format; "" detects it from the header or the file's shape.
	Format Format
	// Seed drives the synthesis of missing fields.
	Seed int64
	// Start is the time that submit timestamps count from, for the formats whose submit
	// times are timestamps (philly-json, philly-csv, helios, pai). When zero, Open reads the
	// file once to find the earliest submit and counts from it, so the first job to arrive
	// has Submit 0.
	Start time.Time
	// PAITaskTable is the pai_task_table of a PAI job table; "" looks beside the job table.
	PAITaskTable string
}

// Reader streams the jobs of a trace. Next returns io.EOF after the last job.
type Reader interface {
	Next() (Job, error)
	Format() Format
	Close() error
}

// SkipCounter is implemented by the readers of this package: Skipped counts the records
// dropped on purpose so far (each reader's documentation says which).
type SkipCounter interface {
	Skipped() int
}

// source yields a trace's jobs in file order; errSkip marks a dropped record. For absolute
// formats, Submit is an offset from the Unix epoch.
type source interface {
	next() (Job, error)
}

type reader struct {
	format  Format
	name    string
	src     source
	closer  io.Closer
	seed    int64
	base    time.Duration
	skipped int
	synth   bool
}

var (
	_ Reader      = (*reader)(nil)
	_ SkipCounter = (*reader)(nil)
)

func (r *reader) Format() Format { return r.format }
func (r *reader) Skipped() int   { return r.skipped }

func (r *reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

func (r *reader) Next() (Job, error) {
	for {
		j, err := r.src.next()
		if errors.Is(err, errSkip) {
			r.skipped++
			continue
		}
		if err != nil {
			return Job{}, err
		}
		j.Submit -= r.base
		if j.Submit < 0 || j.Submit > maxDuration {
			return Job{}, r.submitError(j)
		}
		if r.synth {
			synthesize(&j, r.seed)
		}
		return j, nil
	}
}

// submitError says why j's submit time, counted from the trace's start, is out of range:
// before Options.Start, or more than 100 years after the start (a corrupt timestamp; the
// simulator's clock and sums of times would overflow).
func (r *reader) submitError(j Job) error {
	col, json := submitColumn(r.format)
	why := fmt.Errorf("submit time %.1f years after the trace's start exceeds 100 years", float64(j.Submit)/float64(365*24*time.Hour))
	if j.Submit < 0 {
		why = fmt.Errorf("submit time %s before the trace's start (Options.Start)", (-j.Submit).Round(time.Second))
	}
	return &ParseError{File: r.name, Line: j.Line, Column: col, JSON: json, Err: why}
}

// submitColumn names the column (or JSON field) a format's submit time comes from.
func submitColumn(f Format) (col string, json bool) {
	switch f {
	case FormatPhillyJSON:
		return "submitted_time", true
	case FormatPhillyCSV:
		return "timestamp", false
	case FormatPAI:
		return "start_time", false
	case FormatOpenB:
		return "creation_time", false
	case FormatPickyman:
		return "submit_s", false
	}
	return "submit_time", false
}

// Open opens a trace file, detects (or takes) its format, and returns a reader whose jobs
// have every missing field synthesized from opts.Seed. Jobs come in file order; for the
// formats with timestamps (see Options.Start) Open first reads the file once to find the
// earliest submit time.
func Open(path string, opts Options) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	r, err := newReader(f, filepath.Base(path), path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// ReadAll reads every job of a trace and returns them in arrival order (sorted by Submit,
// then by file position), which is what a simulator replays. A trace whose file is not in
// arrival order (philly.csv is not) is sorted here.
func ReadAll(path string, opts Options) ([]Job, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAll(r)
}

// Collect reads the rest of r and returns the jobs in arrival order, as ReadAll does; it lets
// a caller that opened a trace (to learn its Format, say) read it without opening it again.
func Collect(r Reader) ([]Job, error) { return readAll(r) }

func readAll(r Reader) ([]Job, error) {
	var jobs []Job
	for {
		j, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b Job) int {
		if a.Submit != b.Submit {
			return int(min(max(a.Submit-b.Submit, -1), 1))
		}
		return a.Line - b.Line // unique per file: the sort is stable
	})
	return jobs, nil
}

// newReader reads a trace from rs; name is the file name errors use, and path (maybe "")
// locates the PAI task table.
func newReader(rs io.ReadSeeker, name, path string, opts Options) (*reader, error) {
	format := opts.Format
	if format == "" {
		var err error
		if format, err = detect(rs, name); err != nil {
			return nil, err
		}
	} else if !slices.Contains(Formats, format) {
		return nil, fmt.Errorf("traces: unknown format %q (formats: %v)", format, Formats)
	}
	open, absolute, err := opener(format, name, path, opts)
	if err != nil {
		return nil, err
	}
	return startReader(rs, name, format, open, absolute, opts)
}

// startReader finds the submit base (for absolute formats) and opens the source.
func startReader(rs io.ReadSeeker, name string, format Format, open openFunc, absolute bool, opts Options) (*reader, error) {
	var err error
	r := &reader{format: format, name: name, seed: opts.Seed, synth: format != FormatPickyman}
	if absolute {
		if !opts.Start.IsZero() {
			r.base = opts.Start.Sub(time.Unix(0, 0))
		} else if r.base, err = earliestSubmit(rs, name, open); err != nil {
			return nil, err
		}
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("traces: %s: %w", name, err)
	}
	if r.src, err = open(bufio.NewReaderSize(rs, 64<<10), name); err != nil {
		return nil, err
	}
	return r, nil
}

type openFunc func(io.Reader, string) (source, error)

func csvOpener(f *csvFormat) openFunc {
	return func(r io.Reader, name string) (source, error) { return newCSVSource(r, name, f) }
}

// opener returns how to open a format's source and whether its submit times are timestamps.
func opener(format Format, name, path string, opts Options) (openFunc, bool, error) {
	switch format {
	case FormatPhillyJSON:
		return func(r io.Reader, name string) (source, error) { return newPhillySource(r, name) }, true, nil
	case FormatPAI:
		tasks := opts.PAITaskTable
		if tasks == "" && path == "" {
			return nil, false, fmt.Errorf("traces: %s: the PAI job table needs its task table; set Options.PAITaskTable", name)
		}
		if tasks == "" {
			var err error
			if tasks, err = paiTaskTablePath(path); err != nil {
				return nil, false, err
			}
		}
		demand, err := loadPAITasks(tasks)
		if err != nil {
			return nil, false, err
		}
		return csvOpener(paiFormat(demand)), true, nil
	}
	for _, f := range csvFormats {
		if f.format == format {
			return csvOpener(f), f.absolute, nil
		}
	}
	return nil, false, fmt.Errorf("traces: no reader for format %q", format)
}

// csvFormats are the CSV formats with a header row, in detection order (a format whose
// columns include another's comes first).
var csvFormats = []*csvFormat{pickymanFormat, muriFormat, tiresiasFormat, phillyCSVFormat,
	heliosFormat, openbFormat, bloxFormat}

// earliestSubmit reads the whole trace once and returns its earliest submit time.
func earliestSubmit(rs io.ReadSeeker, name string, open openFunc) (time.Duration, error) {
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("traces: %s: %w", name, err)
	}
	src, err := open(bufio.NewReaderSize(rs, 64<<10), name)
	if err != nil {
		return 0, err
	}
	first, base := true, time.Duration(0)
	for {
		j, err := src.next()
		if errors.Is(err, io.EOF) {
			return base, nil
		}
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if first || j.Submit < base {
			first, base = false, j.Submit
		}
	}
}

// detect names the format of a trace from its first line: a JSON array is the Philly job
// log; a CSV header matches the format whose columns it holds (the most specific when
// several match); a headerless line is matched by shape (PAI).
func detect(rs io.ReadSeeker, name string) (Format, error) {
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("traces: %s: %w", name, err)
	}
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(rs, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("traces: %s: %w", name, err)
	}
	head = bytes.TrimPrefix(head[:n], []byte("\ufeff"))
	if trimmed := bytes.TrimLeft(head, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return FormatPhillyJSON, nil
	}
	line, _, _ := bytes.Cut(head, []byte{'\n'})
	line = bytes.TrimRight(line, "\r")
	unknown := &UnknownFormatError{File: name, Header: string(line[:min(len(line), 120)]), Tried: Formats}
	rec, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		return "", unknown
	}
	cols := map[string]bool{}
	for i, c := range rec {
		cols[normalizeHeader(c, i)] = true
	}
	for _, f := range csvFormats {
		if hasAll(cols, f.columns) {
			return f.format, nil
		}
	}
	switch {
	case looksLikePAIJob(rec):
		return FormatPAI, nil
	case looksLikePAITask(rec):
		return "", fmt.Errorf("traces: %s: a PAI pai_task_table; open the pai_job_table beside it", name)
	case isClusterHeader(cols):
		return "", fmt.Errorf("traces: %s: a cluster file, not a job trace; pass it as a cluster (ParseCluster)", name)
	}
	return "", unknown
}

func hasAll(cols map[string]bool, want []string) bool {
	for _, c := range want {
		if !cols[c] {
			return false
		}
	}
	return true
}

// FormatNames lists the formats as strings (for flags and messages).
func FormatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
