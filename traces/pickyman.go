package traces

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The pickyman CSV holds every Job field, one job a line, durations as exact decimal
// seconds. WriteCSV writes it and Open reads it back to equal jobs (Line aside, which is the
// line in the file read).
var pickymanColumns = []string{"id", "submit_s", "duration_s", "gpus", "workers", "gpus_per_worker",
	"gpu_model", "user", "queue", "priority", "priority_class", "status", "model", "epochs",
	"epoch_time_s", "dataset_bytes", "checkpoint_bytes", "synthesized"}

// fieldNames names the Fields in the synthesized column, which joins them with '|'.
var fieldNames = []struct {
	f    Field
	name string
}{
	{FieldModel, "model"}, {FieldEpochs, "epochs"}, {FieldEpochTime, "epoch_time"},
	{FieldDatasetBytes, "dataset_bytes"}, {FieldCheckpointBytes, "checkpoint_bytes"},
	{FieldWorkers, "workers"}, {FieldPriority, "priority"}, {FieldGPUModel, "gpu_model"},
}

// String lists the set's field names joined by '|' ("" for the empty set).
func (s FieldSet) String() string {
	var parts []string
	for _, fn := range fieldNames {
		if s.Has(fn.f) {
			parts = append(parts, fn.name)
		}
	}
	return strings.Join(parts, "|")
}

// ParseFieldSet reads a FieldSet written by FieldSet.String.
func ParseFieldSet(s string) (FieldSet, error) {
	var set FieldSet
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
next:
	for _, part := range strings.Split(s, "|") {
		for _, fn := range fieldNames {
			if strings.TrimSpace(part) == fn.name {
				set |= FieldSet(fn.f)
				continue next
			}
		}
		return 0, fmt.Errorf("unknown field %q", part)
	}
	return set, nil
}

// WriteCSV writes jobs in FormatPickyman.
func WriteCSV(w io.Writer, jobs []Job) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(pickymanColumns); err != nil {
		return err
	}
	rec := make([]string, len(pickymanColumns))
	for _, j := range jobs {
		rec = rec[:0]
		rec = append(rec, j.ID, formatSeconds(j.Submit), formatSeconds(j.Duration),
			itoa32(j.GPUs), itoa32(j.Workers), itoa32(j.GPUsPerWorker), j.GPUModel, j.User, j.Queue,
			itoa32(j.Priority), j.PriorityClass, j.Status, j.Model, itoa32(j.Epochs),
			formatSeconds(j.EpochTime), strconv.FormatInt(j.DatasetBytes, 10),
			strconv.FormatInt(j.CheckpointBytes, 10), j.Synthesized.String())
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func itoa32(v int32) string { return strconv.FormatInt(int64(v), 10) }

var pickymanFormat = &csvFormat{
	format:  FormatPickyman,
	columns: pickymanColumns,
	parse:   parsePickyman,
}

// parsePickyman reads a row WriteCSV wrote. Every field is present, so nothing is
// synthesized on read; the invariants are checked instead.
func parsePickyman(r *row) (Job, error) {
	j := Job{
		ID:              requireID(r, "id"),
		Submit:          r.exactSeconds("submit_s"),
		Duration:        r.exactSeconds("duration_s"),
		GPUs:            r.gpus("gpus"),
		Workers:         r.int32("workers"),
		GPUsPerWorker:   r.int32("gpus_per_worker"),
		GPUModel:        r.str("gpu_model"),
		User:            r.str("user"),
		Queue:           r.str("queue"),
		Priority:        r.int32("priority"),
		PriorityClass:   r.str("priority_class"),
		Status:          r.str("status"),
		Model:           r.str("model"),
		Epochs:          r.int32("epochs"),
		EpochTime:       r.exactSeconds("epoch_time_s"),
		DatasetBytes:    r.int("dataset_bytes"),
		CheckpointBytes: r.int("checkpoint_bytes"),
	}
	set, err := ParseFieldSet(r.str("synthesized"))
	if err != nil {
		r.fail("synthesized", err)
	}
	j.Synthesized = set
	if r.err != nil {
		return j, nil
	}
	switch {
	case j.Submit < 0:
		r.failf("submit_s", "negative submit time %q", r.str("submit_s"))
	case j.Submit > maxDuration:
		r.failf("submit_s", "submit time out of range %q (more than 100 years)", r.str("submit_s"))
	case j.Duration < 0:
		r.failf("duration_s", "negative duration %q", r.str("duration_s"))
	case j.Duration > maxDuration:
		r.failf("duration_s", "duration out of range %q (more than 100 years)", r.str("duration_s"))
	case j.EpochTime > maxDuration:
		r.failf("epoch_time_s", "epoch time out of range %q (more than 100 years)", r.str("epoch_time_s"))
	case j.Workers <= 0 || j.GPUsPerWorker <= 0 || int64(j.Workers)*int64(j.GPUsPerWorker) != int64(j.GPUs):
		r.failf("workers", "workers x gpus_per_worker (%d x %d) != gpus (%d)", j.Workers, j.GPUsPerWorker, j.GPUs)
	case j.Epochs < 0:
		r.failf("epochs", "negative epochs %d", j.Epochs)
	case j.EpochTime < 0:
		r.failf("epoch_time_s", "negative epoch time %q", r.str("epoch_time_s"))
	case j.DatasetBytes < 0:
		r.failf("dataset_bytes", "negative size %d", j.DatasetBytes)
	case j.CheckpointBytes < 0:
		r.failf("checkpoint_bytes", "negative size %d", j.CheckpointBytes)
	}
	return j, nil
}

func (r *row) exactSeconds(col string) time.Duration {
	v, err := parseSecondsExact(r.str(col))
	if err != nil {
		r.fail(col, err)
	}
	return v
}

func (r *row) int32(col string) int32 {
	v := r.int(col)
	if r.err == nil && (v > 1<<31-1 || v < -1<<31) {
		r.failf(col, "integer out of range %q", r.str(col))
		return 0
	}
	return int32(v)
}
