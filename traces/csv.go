package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// row is one CSV record under parse. The first error sticks, so a parser reads every field
// it needs and checks row.err once; the error names the file, the line and the column.
type row struct {
	file string
	line int
	idx  map[string]int
	rec  []string
	err  error
}

func (r *row) str(col string) string {
	i, ok := r.idx[col]
	if !ok || i >= len(r.rec) {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

func (r *row) fail(col string, err error) {
	if r.err == nil {
		r.err = &ParseError{File: r.file, Line: r.line, Column: col, Err: err}
	}
}

func (r *row) failf(col, format string, args ...any) { r.fail(col, fmt.Errorf(format, args...)) }

func (r *row) int(col string) int64 {
	v, err := parseInt(r.str(col))
	if err != nil {
		r.fail(col, err)
	}
	return v
}

func (r *row) count(col string) int64 {
	v, err := parseCount(r.str(col))
	if err != nil {
		r.fail(col, err)
	}
	return v
}

func (r *row) float(col string) float64 {
	v, err := parseFloat(r.str(col))
	if err != nil {
		r.fail(col, err)
	}
	return v
}

func (r *row) dur(col string, unit time.Duration) time.Duration {
	v, err := parseDuration(r.str(col), unit)
	if err != nil {
		r.fail(col, err)
	}
	return v
}

// nonNegDur parses a duration that must not be negative.
func (r *row) nonNegDur(col string, unit time.Duration) time.Duration {
	v := r.dur(col, unit)
	if v < 0 {
		r.failf(col, "negative duration %q", r.str(col))
	}
	return v
}

func (r *row) ts(col string) time.Duration {
	v, err := parseTimestamp(r.str(col))
	if err != nil {
		r.fail(col, err)
	}
	return v
}

// gpus parses a GPU count that must be positive and at most maxGPUs.
func (r *row) gpus(col string) int32 {
	v := r.int(col)
	return r.checkGPUs(col, v)
}

func (r *row) checkGPUs(col string, v int64) int32 {
	if r.err != nil {
		return 0
	}
	if v <= 0 {
		r.failf(col, "GPU count must be positive, got %d", v)
		return 0
	}
	if v > maxGPUs {
		r.failf(col, "GPU count %d exceeds %d", v, maxGPUs)
		return 0
	}
	return int32(v)
}

// maxGPUs bounds one job's GPU demand; larger values are taken as corrupt input.
const maxGPUs = 1 << 16

// csvFormat describes a CSV trace format.
type csvFormat struct {
	format Format
	// columns are the header columns the format needs (for a headerless format, every
	// column in file order).
	columns    []string
	headerless bool
	// absolute is true when the trace's submit times are timestamps; the reader then makes
	// Submit an offset from the earliest submit (or Options.Start).
	absolute bool
	// parse turns a row into a job; errSkip drops the row.
	parse func(*row) (Job, error)
}

// csvSource streams the rows of one CSV trace.
type csvSource struct {
	f     *csvFormat
	cr    *csv.Reader
	ncols int
	row   row
}

func newCSVSource(r io.Reader, file string, f *csvFormat) (*csvSource, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	s := &csvSource{f: f, cr: cr, row: row{file: file, idx: map[string]int{}}}
	if f.headerless {
		for i, c := range f.columns {
			s.row.idx[c] = i
		}
		s.ncols = len(f.columns)
		return s, nil
	}
	hdr, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{File: file, Line: 1, Err: errors.New("empty file")}
		}
		return nil, csvError(file, err)
	}
	for i, h := range hdr {
		s.row.idx[normalizeHeader(h, i)] = i
	}
	s.ncols = len(hdr)
	for _, c := range f.columns {
		if _, ok := s.row.idx[c]; !ok {
			return nil, &ParseError{File: file, Line: 1, Column: c, Err: errors.New("missing column")}
		}
	}
	return s, nil
}

// normalizeHeader trims a header cell, drops a UTF-8 byte-order mark, and lower-cases it.
func normalizeHeader(h string, i int) string {
	if i == 0 {
		h = strings.TrimPrefix(h, "\ufeff")
	}
	return strings.ToLower(strings.TrimSpace(h))
}

func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{File: file, Line: pe.Line, Err: pe.Err}
	}
	return fmt.Errorf("traces: %s: %w", file, err)
}

// next returns the next row's job, errSkip for a dropped row, or io.EOF.
func (s *csvSource) next() (Job, error) {
	rec, err := s.cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Job{}, io.EOF
		}
		return Job{}, csvError(s.row.file, err)
	}
	line, _ := s.cr.FieldPos(0)
	s.row.line, s.row.rec, s.row.err = line, rec, nil
	if len(rec) != s.ncols {
		return Job{}, &ParseError{File: s.row.file, Line: line,
			Err: fmt.Errorf("expected %d fields, got %d", s.ncols, len(rec))}
	}
	j, err := s.f.parse(&s.row)
	if err != nil {
		return Job{}, err
	}
	if s.row.err != nil {
		return Job{}, s.row.err
	}
	j.Line = line
	return j, nil
}

// roundUpGPUs converts a fractional GPU share (1.0 is one GPU) to whole GPUs, rounding up.
func roundUpGPUs(share float64) int64 {
	if share <= 0 {
		return 0
	}
	if share > maxGPUs {
		return maxGPUs + 1
	}
	return int64(math.Ceil(share - 1e-9))
}
