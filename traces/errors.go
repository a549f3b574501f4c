package traces

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseError reports a malformed record: the file's base name, the 1-based line the record
// starts on, and the column (CSV) or field (JSON) at fault. Its message reads
// `philly.csv:1234: column "num_gpus": invalid integer "x"`.
type ParseError struct {
	File string
	Line int
	// Column is the CSV column or JSON field at fault, "" when the whole record is.
	Column string
	// JSON is true when Column names a JSON field rather than a CSV column.
	JSON bool
	Err  error
}

func (e *ParseError) Error() string {
	switch {
	case e.Column == "":
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	case e.JSON:
		return fmt.Sprintf("%s:%d: field %q: %v", e.File, e.Line, e.Column, e.Err)
	default:
		return fmt.Sprintf("%s:%d: column %q: %v", e.File, e.Line, e.Column, e.Err)
	}
}

func (e *ParseError) Unwrap() error { return e.Err }

// UnknownFormatError is returned by Open when a file matches no known format.
type UnknownFormatError struct {
	File string
	// Header is the file's first line (cut to 120 bytes).
	Header string
	Tried  []Format
}

func (e *UnknownFormatError) Error() string {
	names := make([]string, len(e.Tried))
	for i, f := range e.Tried {
		names[i] = string(f)
	}
	return fmt.Sprintf("traces: %s: unknown trace format (first line %q); tried %s",
		e.File, e.Header, strings.Join(names, ", "))
}

// errSkip marks a record that the reader drops on purpose (see the reader's doc comment).
var errSkip = errors.New("skip")

// maxDuration bounds every duration and time offset a trace may hold (about 290 years is
// time.Duration's range; 100 years leaves room for sums without overflow).
const maxDuration = 100 * 365 * 24 * time.Hour

func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid integer %q", s)
	}
	return v, nil
}

// parseCount parses a non-negative integer that may be written as a float with no
// fraction ("4.0"), as the PAI tables do.
func parseCount(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<40 {
		return 0, fmt.Errorf("invalid integer %q", s)
	}
	return int64(f), nil
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid number %q", s)
	}
	return f, nil
}

// parseDuration parses a number of units (time.Second or time.Millisecond), possibly with a
// fraction, into a Duration; it rejects values beyond maxDuration in either direction.
func parseDuration(s string, unit time.Duration) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		if v > int64(maxDuration/unit) || v < -int64(maxDuration/unit) {
			return 0, fmt.Errorf("duration out of range %q", s)
		}
		return time.Duration(v) * unit, nil
	}
	f, err := parseFloat(t)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	d := f * float64(unit)
	if math.Abs(d) > float64(maxDuration) {
		return 0, fmt.Errorf("duration out of range %q", s)
	}
	return time.Duration(math.Round(d)), nil
}

// timeLayout is the timestamp layout of the Philly and Helios traces (UTC assumed).
const timeLayout = "2006-01-02 15:04:05"

// parseTimestamp parses "YYYY-MM-DD HH:MM:SS" (UTC) or Unix seconds (possibly fractional)
// and returns the time as an offset from the Unix epoch.
func parseTimestamp(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	d, ok := parseLayoutFast(t)
	if !ok {
		tm, err := time.Parse(timeLayout, t)
		ok = err == nil
		d = tm.Sub(time.Unix(0, 0))
	}
	if ok {
		// Both paths: time.Time.Sub saturates, so a year such as 0001 or 9999 reads as
		// about 290 years and would overflow any sum.
		if d > maxDuration || d < -maxDuration {
			return 0, fmt.Errorf("timestamp out of range %q (more than 100 years from 1970)", s)
		}
		return d, nil
	}
	d, err := parseDuration(t, time.Second)
	if err != nil {
		return 0, fmt.Errorf("invalid timestamp %q", s)
	}
	return d, nil
}

// formatSeconds writes d as decimal seconds with no trailing zeros, exactly ("90",
// "1.5", "0.000000001"); parseSecondsExact reads it back to the nanosecond.
func formatSeconds(d time.Duration) string {
	sign := ""
	n := int64(d)
	if n < 0 {
		sign, n = "-", -n
	}
	sec, frac := n/1e9, n%1e9
	if frac == 0 {
		return sign + strconv.FormatInt(sec, 10)
	}
	f := strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
	return sign + strconv.FormatInt(sec, 10) + "." + f
}

func parseSecondsExact(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	whole, frac, hasFrac := strings.Cut(t, ".")
	bad := fmt.Errorf("invalid duration %q", s)
	if whole == "" || strings.ContainsAny(whole, "+-") || (hasFrac && (frac == "" || len(frac) > 9 || strings.ContainsAny(frac, "+-"))) {
		return 0, bad
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || sec > int64(maxDuration/time.Second) {
		return 0, bad
	}
	var ns int64
	if hasFrac {
		ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil {
			return 0, bad
		}
	}
	d := time.Duration(sec)*time.Second + time.Duration(ns)
	if neg {
		d = -d
	}
	return d, nil
}

// parseLayoutFast parses timeLayout without allocating; ok is false for anything else
// (time.Parse then decides).
func parseLayoutFast(t string) (time.Duration, bool) {
	if len(t) != len(timeLayout) || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' || t[16] != ':' {
		return 0, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(t[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, s := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 {
		return 0, false
	}
	tm := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
	if tm.Day() != d {
		return 0, false
	}
	return tm.Sub(time.Unix(0, 0)), true
}
