package traces

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Alibaba PAI v2020 (cluster-trace-gpu-v2020). Neither table has a header row; Open tells
// them apart by shape. A job's GPU demand is in pai_task_table, which Open finds beside the
// job table (the name with "job_table" replaced by "task_table") or takes from
// Options.PAITaskTable.

var paiJobColumns = []string{"job_name", "inst_id", "user", "status", "start_time", "end_time"}

var paiTaskColumns = []string{"job_name", "task_name", "inst_num", "status", "start_time",
	"end_time", "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"}

// paiDemand is a job's GPU demand summed over its tasks.
type paiDemand struct {
	gpus, workers int64
	// per is the GPUs of every GPU instance, or -1 when the tasks differ.
	per int64
	// gpuType is the GPU type every GPU task asked for, "" when none or they differ.
	gpuType  string
	typeSeen bool
}

// readPAITasks sums the task table into one demand per job: each instance of a task asks
// for ceil(plan_gpu/100) whole GPUs (plan_gpu is a percentage of one GPU), and each GPU
// instance is one worker. This is the only table a reader holds whole, as one small entry
// per job.
func readPAITasks(r io.Reader, file string) (map[string]*paiDemand, error) {
	demand := map[string]*paiDemand{}
	f := &csvFormat{format: FormatPAI, columns: paiTaskColumns, headerless: true,
		parse: func(r *row) (Job, error) {
			name := requireID(r, "job_name")
			n := r.count("inst_num")
			var share float64
			if r.str("plan_gpu") != "" {
				share = r.float("plan_gpu")
			}
			if r.err != nil {
				return Job{}, nil
			}
			if n < 0 {
				r.failf("inst_num", "negative instance count %d", n)
			}
			if share < 0 {
				r.failf("plan_gpu", "negative GPU share %q", r.str("plan_gpu"))
			}
			per := roundUpGPUs(share / 100)
			if r.err != nil || per == 0 || n == 0 {
				return Job{}, errSkip
			}
			d := demand[name]
			if d == nil {
				d = &paiDemand{per: per}
				demand[name] = d
			}
			if per > maxGPUs || n > maxGPUs || d.gpus+n*per > maxGPUs {
				r.failf("plan_gpu", "job GPU demand exceeds %d", maxGPUs)
				return Job{}, nil
			}
			d.gpus += n * per
			d.workers += n
			if d.per != per {
				d.per = -1
			}
			switch t := r.str("gpu_type"); {
			case !d.typeSeen:
				d.gpuType, d.typeSeen = t, true
			case d.gpuType != t:
				d.gpuType = ""
			}
			return Job{}, errSkip
		}}
	src, err := newCSVSource(r, file, f)
	if err != nil {
		return nil, err
	}
	for {
		_, err := src.next()
		if errors.Is(err, io.EOF) {
			return demand, nil
		}
		if err != nil && !errors.Is(err, errSkip) {
			return nil, err
		}
	}
}

// paiFormat maps a pai_job_table row: job_name -> ID, user, status -> Status, start_time ->
// Submit (offset from the earliest), end_time - start_time -> Duration; GPUs, Workers and
// GPUModel (gpu_type, "MISC" kept as is) from the task table. Skipped: jobs with no GPU task
// (CPU jobs, or absent from the task table) and jobs with no start or end time (never ran or
// still running when the trace ends).
func paiFormat(demand map[string]*paiDemand) *csvFormat {
	return &csvFormat{
		format: FormatPAI, columns: paiJobColumns, headerless: true, absolute: true,
		parse: func(r *row) (Job, error) {
			j := Job{ID: requireID(r, "job_name"), User: r.str("user"), Status: r.str("status")}
			d := demand[j.ID]
			if r.err != nil {
				return j, nil
			}
			if d == nil || r.str("start_time") == "" || r.str("end_time") == "" {
				return Job{}, errSkip
			}
			start, end := r.ts("start_time"), r.ts("end_time")
			switch {
			case r.err != nil:
			case end < start:
				r.failf("end_time", "end before start (%s < %s)", r.str("end_time"), r.str("start_time"))
			case end-start > maxDuration:
				r.failf("end_time", "ends more than 100 years after its start (%s)", r.str("start_time"))
			}
			j.Submit, j.Duration = start, end-start
			j.GPUs = r.checkGPUs("job_name", d.gpus)
			if d.per > 0 {
				setWorkers(&j, d.workers)
			}
			j.GPUModel = d.gpuType
			return skipIdle(r, j)
		},
	}
}

// paiTaskTablePath returns the task table beside a job table.
func paiTaskTablePath(jobTable string) (string, error) {
	dir, base := filepath.Split(jobTable)
	if !strings.Contains(base, "job_table") {
		return "", fmt.Errorf("traces: %s: cannot find the pai_task_table beside it (name lacks \"job_table\"); set Options.PAITaskTable", jobTable)
	}
	p := filepath.Join(dir, strings.Replace(base, "job_table", "task_table", 1))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("traces: %s: the PAI job table needs its task table: %w; set Options.PAITaskTable", jobTable, err)
	}
	return p, nil
}

func loadPAITasks(path string) (map[string]*paiDemand, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	defer f.Close()
	return readPAITasks(f, filepath.Base(path))
}

// isTimeOrEmpty reports whether s is empty or a number (a PAI timestamp).
func isTimeOrEmpty(s string) bool {
	if strings.TrimSpace(s) == "" {
		return true
	}
	_, err := parseDuration(s, time.Second)
	return err == nil
}

// looksLikePAIJob reports whether a headerless first row has the job table's shape.
func looksLikePAIJob(rec []string) bool {
	return len(rec) == len(paiJobColumns) && !isTimeOrEmpty(rec[3]) && isTimeOrEmpty(rec[4]) && isTimeOrEmpty(rec[5])
}

// looksLikePAITask reports whether a headerless first row has the task table's shape.
func looksLikePAITask(rec []string) bool {
	if len(rec) != len(paiTaskColumns) {
		return false
	}
	_, err := parseCount(rec[2])
	return err == nil && isTimeOrEmpty(rec[8])
}
