package traces

import (
	"strconv"
	"time"
)

// The CSV formats with a header row. Each parse function documents its mapping; the
// reader sets Job.Line and synthesizes what the parse leaves empty (see synth.go).

var tiresiasFormat = &csvFormat{
	format:  FormatTiresias,
	columns: []string{"job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"},
	parse:   parseTiresias,
}

// parseTiresias maps a Tiresias row (times in seconds from the trace start): job_id -> ID,
// num_gpu -> GPUs, submit_time -> Submit, duration -> Duration, model_name -> Model.
// iterations and interval (the gap to the previous arrival) are not used.
func parseTiresias(r *row) (Job, error) {
	j := Job{
		ID:       requireID(r, "job_id"),
		GPUs:     r.gpus("num_gpu"),
		Submit:   r.nonNegDur("submit_time", time.Second),
		Duration: r.nonNegDur("duration", time.Second),
		Model:    r.str("model_name"),
	}
	return skipIdle(r, j)
}

var muriFormat = &csvFormat{
	format: FormatMuri,
	columns: []string{"job_id", "num_gpu", "submit_time", "iterations", "model_name", "batch_size",
		"duration", "interval", "iteration_time", "resource_time_0", "resource_time_1",
		"resource_time_2", "priority"},
	parse: parseMuri,
}

// parseMuri maps a Muri row (times in milliseconds): like Tiresias, plus priority 0 -> low,
// 1 -> high.
func parseMuri(r *row) (Job, error) {
	j := Job{
		ID:       requireID(r, "job_id"),
		GPUs:     r.gpus("num_gpu"),
		Submit:   r.nonNegDur("submit_time", time.Millisecond),
		Duration: r.nonNegDur("duration", time.Millisecond),
		Model:    r.str("model_name"),
	}
	switch p := r.str("priority"); p {
	case "0":
		j.Priority, j.PriorityClass = PriorityLow, ClassLow
	case "1":
		j.Priority, j.PriorityClass = PriorityHigh, ClassHigh
	default:
		r.failf("priority", "invalid priority %q (want 0 or 1)", p)
	}
	return skipIdle(r, j)
}

var phillyCSVFormat = &csvFormat{
	format:   FormatPhillyCSV,
	columns:  []string{"timestamp", "duration", "num_gpus", "gpu_time", "cluster"},
	absolute: true,
	parse:    parsePhillyCSV,
}

// parsePhillyCSV maps a row of the Philly-derived CSV: timestamp -> Submit (offset from the
// earliest timestamp), duration (seconds) -> Duration, num_gpus -> GPUs, cluster -> Queue.
// The file has no job ID: ID is "L" followed by the line number. gpu_time is not used.
func parsePhillyCSV(r *row) (Job, error) {
	j := Job{
		ID:       "L" + strconv.Itoa(r.line),
		Submit:   r.ts("timestamp"),
		Duration: r.nonNegDur("duration", time.Second),
		GPUs:     r.gpus("num_gpus"),
		Queue:    r.str("cluster"),
	}
	return skipIdle(r, j)
}

var heliosFormat = &csvFormat{
	format: FormatHelios,
	columns: []string{"job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
		"submit_time", "start_time", "end_time", "duration", "queue"},
	absolute: true,
	parse:    parseHelios,
}

// parseHelios maps a Helios cluster_log row: job_id -> ID, user, vc -> Queue, gpu_num ->
// GPUs, node_num -> Workers (when it divides gpu_num into workers of at most 8 GPUs), state
// -> Status, submit_time -> Submit, duration (seconds) -> Duration. CPU-only jobs (gpu_num
// 0) are skipped.
func parseHelios(r *row) (Job, error) {
	j := Job{
		ID:     requireID(r, "job_id"),
		User:   r.str("user"),
		Queue:  r.str("vc"),
		Status: r.str("state"),
		Submit: r.ts("submit_time"),
	}
	g := r.count("gpu_num")
	if r.err == nil && g == 0 {
		return Job{}, errSkip
	}
	j.GPUs = r.checkGPUs("gpu_num", g)
	nodes := r.count("node_num")
	j.Duration = r.nonNegDur("duration", time.Second)
	setWorkers(&j, nodes)
	return skipIdle(r, j)
}

var openbFormat = &csvFormat{
	format: FormatOpenB,
	columns: []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
		"pod_phase", "creation_time", "deletion_time", "scheduled_time"},
	parse: parseOpenB,
}

// QoSPriority maps the Alibaba v2023 qos classes to the project's two priority classes:
// LS (latency-sensitive) and Guaranteed reserve their resources and are high; Burstable and
// BE (best-effort) are low.
var QoSPriority = map[string]int32{
	"LS": PriorityHigh, "Guaranteed": PriorityHigh, "Burstable": PriorityLow, "BE": PriorityLow,
}

// parseOpenB maps an Alibaba v2023 openb pod (times in seconds from the trace start): name
// -> ID, creation_time -> Submit, deletion_time - scheduled_time -> Duration, num_gpu x
// ceil(gpu_milli/1000) -> GPUs on one worker (a pod is one worker), gpu_spec -> GPUModel,
// qos -> Priority (QoSPriority; PriorityClass keeps the qos name), pod_phase -> Status.
// Skipped: pods with num_gpu 0 (CPU pods) and pods never scheduled (empty scheduled_time).
func parseOpenB(r *row) (Job, error) {
	j := Job{
		ID:       requireID(r, "name"),
		Submit:   r.nonNegDur("creation_time", time.Second),
		GPUModel: r.str("gpu_spec"),
		Status:   r.str("pod_phase"),
	}
	n := r.int("num_gpu")
	if r.err != nil {
		return j, nil
	}
	if n == 0 {
		return Job{}, errSkip
	}
	if n < 0 || n > maxGPUs {
		r.checkGPUs("num_gpu", n)
		return j, nil
	}
	milli := r.int("gpu_milli")
	if r.err == nil && milli <= 0 {
		r.failf("gpu_milli", "GPU share must be positive, got %d", milli)
	}
	per := roundUpGPUs(float64(milli) / 1000)
	if r.err == nil && per > maxGPUs/n {
		r.failf("gpu_milli", "GPU count out of range")
	}
	j.GPUs = r.checkGPUs("num_gpu", n*per)
	setWorkers(&j, 1)
	qos := r.str("qos")
	p, ok := QoSPriority[qos]
	if !ok {
		r.failf("qos", "unknown qos %q (want LS, Guaranteed, Burstable or BE)", qos)
	}
	j.Priority, j.PriorityClass = p, qos
	if r.str("scheduled_time") == "" {
		return Job{}, errSkip
	}
	start := r.nonNegDur("scheduled_time", time.Second)
	end := r.nonNegDur("deletion_time", time.Second)
	if r.err == nil && end < start {
		r.failf("deletion_time", "deletion before scheduling (%s < %s)", r.str("deletion_time"), r.str("scheduled_time"))
	}
	j.Duration = end - start
	return skipIdle(r, j)
}

var bloxFormat = &csvFormat{
	format:  FormatBlox,
	columns: []string{"job_id", "num_gpus", "submit_time", "duration", "model", "batch_size"},
	parse:   parseBlox,
}

// parseBlox maps a Blox row (seconds): job_id -> ID, num_gpus -> GPUs, submit_time ->
// Submit, duration -> Duration, model -> Model. batch_size is not used.
func parseBlox(r *row) (Job, error) {
	j := Job{
		ID:       requireID(r, "job_id"),
		GPUs:     r.gpus("num_gpus"),
		Submit:   r.nonNegDur("submit_time", time.Second),
		Duration: r.nonNegDur("duration", time.Second),
		Model:    r.str("model"),
	}
	return skipIdle(r, j)
}

func requireID(r *row, col string) string {
	id := r.str(col)
	if id == "" {
		r.failf(col, "empty job ID")
	}
	return id
}

// skipIdle drops a job of zero duration: it did no work to schedule.
func skipIdle(r *row, j Job) (Job, error) {
	if r.err == nil && j.Duration == 0 {
		return Job{}, errSkip
	}
	return j, nil
}

// setWorkers takes the trace's worker count when it splits the job's GPUs evenly into
// workers of at most MaxGPUsPerWorker; otherwise the split is left to synthesis.
func setWorkers(j *Job, workers int64) {
	if workers <= 0 || j.GPUs <= 0 || int64(j.GPUs)%workers != 0 {
		return
	}
	per := int64(j.GPUs) / workers
	if per > MaxGPUsPerWorker {
		return
	}
	j.Workers, j.GPUsPerWorker = int32(workers), int32(per)
}
