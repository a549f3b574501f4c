package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// phillyJob is one element of the Philly cluster_job_log array.
type phillyJob struct {
	JobID     string          `json:"jobid"`
	User      string          `json:"user"`
	VC        string          `json:"vc"`
	Status    string          `json:"status"`
	Submitted *string         `json:"submitted_time"`
	Attempts  []phillyAttempt `json:"attempts"`
}

type phillyAttempt struct {
	Start  *string        `json:"start_time"`
	End    *string        `json:"end_time"`
	Detail []phillyDetail `json:"detail"`
}

type phillyDetail struct {
	IP   string   `json:"ip"`
	GPUs []string `json:"gpus"`
}

// phillySource streams the Philly cluster_job_log: a JSON array decoded one element at a
// time, so only one job is held.
//
// Mapping: jobid -> ID, user, vc -> Queue, status -> Status, submitted_time -> Submit
// (offset from the earliest). Duration is the sum over attempts of end_time - start_time
// (attempts with no end, "None" or null, are still running at the trace's end and do not
// count). GPUs and workers come from the last attempt with a detail list: one worker per
// distinct ip, GPUs the number of GPUs listed. Skipped: jobs with no attempts, no finished
// attempt, or no GPU listed.
type phillySource struct {
	file  string
	lc    *lineCounter
	dec   *json.Decoder
	count int
	done  bool
}

func newPhillySource(r io.Reader, file string) (*phillySource, error) {
	lc := &lineCounter{r: r, baseLine: 1}
	dec := json.NewDecoder(lc)
	tok, err := dec.Token()
	if err != nil {
		return nil, &ParseError{File: file, Line: 1, Err: fmt.Errorf("invalid JSON: %v", err)}
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, &ParseError{File: file, Line: 1, Err: errors.New("want a JSON array of jobs")}
	}
	return &phillySource{file: file, lc: lc, dec: dec}, nil
}

func (s *phillySource) next() (Job, error) {
	if s.done {
		return Job{}, io.EOF
	}
	line := s.lc.lineAt(s.recordStart())
	if !s.dec.More() {
		s.done = true
		if _, err := s.dec.Token(); err != nil {
			return Job{}, &ParseError{File: s.file, Line: line, Err: fmt.Errorf("invalid JSON: %v", err)}
		}
		return Job{}, io.EOF
	}
	s.count++
	var pj phillyJob
	if err := s.dec.Decode(&pj); err != nil {
		s.done = true
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Job{}, &ParseError{File: s.file, Line: line, Column: te.Field, JSON: true,
				Err: fmt.Errorf("want a JSON %s, got %s", te.Type, te.Value)}
		}
		return Job{}, &ParseError{File: s.file, Line: line, Err: fmt.Errorf("invalid JSON: %v", err)}
	}
	j, err := pj.job(func(field string, err error) error {
		return &ParseError{File: s.file, Line: line, Column: field, JSON: true, Err: err}
	})
	if err != nil {
		return Job{}, err
	}
	j.Line = line
	return j, nil
}

// recordStart is the input offset of the next array element (past spaces and the comma).
func (s *phillySource) recordStart() int64 {
	off := s.dec.InputOffset()
	buf, _ := io.ReadAll(io.LimitReader(s.dec.Buffered(), 4096))
	for _, c := range buf {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' {
			break
		}
		off++
	}
	return off
}

// phillyNone reports whether a Philly time is absent: null, "", or "None".
func phillyNone(s *string) bool {
	return s == nil || strings.TrimSpace(*s) == "" || strings.TrimSpace(*s) == "None"
}

func (pj *phillyJob) job(fail func(field string, err error) error) (Job, error) {
	if pj.JobID == "" {
		return Job{}, fail("jobid", errors.New("empty job ID"))
	}
	if phillyNone(pj.Submitted) {
		return Job{}, fail("submitted_time", errors.New("missing submit time"))
	}
	submit, err := parseTimestamp(*pj.Submitted)
	if err != nil {
		return Job{}, fail("submitted_time", err)
	}
	j := Job{ID: pj.JobID, User: pj.User, Queue: pj.VC, Status: pj.Status, Submit: submit}
	var ran bool
	for i, a := range pj.Attempts {
		if phillyNone(a.Start) || phillyNone(a.End) {
			continue
		}
		start, err := parseTimestamp(*a.Start)
		if err != nil {
			return Job{}, fail(fmt.Sprintf("attempts[%d].start_time", i), err)
		}
		end, err := parseTimestamp(*a.End)
		if err != nil {
			return Job{}, fail(fmt.Sprintf("attempts[%d].end_time", i), err)
		}
		if end < start {
			return Job{}, fail(fmt.Sprintf("attempts[%d].end_time", i),
				fmt.Errorf("end before start (%s < %s)", *a.End, *a.Start))
		}
		if j.Duration > maxDuration-(end-start) {
			return Job{}, fail(fmt.Sprintf("attempts[%d].end_time", i), errors.New("total duration out of range"))
		}
		j.Duration += end - start
		ran = true
	}
	var gpus, workers int64
	for i := len(pj.Attempts) - 1; i >= 0 && gpus == 0; i-- {
		ips := map[string]bool{}
		for _, d := range pj.Attempts[i].Detail {
			gpus += int64(len(d.GPUs))
			if len(d.GPUs) > 0 {
				ips[d.IP] = true
			}
		}
		workers = int64(len(ips))
	}
	if !ran || gpus == 0 || j.Duration == 0 {
		return Job{}, errSkip
	}
	if gpus > maxGPUs {
		return Job{}, fail("attempts", fmt.Errorf("GPU count %d exceeds %d", gpus, maxGPUs))
	}
	j.GPUs = int32(gpus)
	setWorkers(&j, workers)
	return j, nil
}

// lineCounter passes reads through and tells the line of an input offset. It keeps the bytes
// read since the last offset asked for, so offsets must be asked for in increasing order.
type lineCounter struct {
	r        io.Reader
	base     int64
	baseLine int
	buf      []byte
}

func (lc *lineCounter) Read(p []byte) (int, error) {
	n, err := lc.r.Read(p)
	lc.buf = append(lc.buf, p[:n]...)
	return n, err
}

// lineAt returns the 1-based line of offset off and forgets the bytes before it.
func (lc *lineCounter) lineAt(off int64) int {
	k := min(max(off-lc.base, 0), int64(len(lc.buf)))
	lc.baseLine += bytes.Count(lc.buf[:k], []byte{'\n'})
	n := copy(lc.buf, lc.buf[k:])
	lc.buf = lc.buf[:n]
	lc.base += k
	return lc.baseLine
}
