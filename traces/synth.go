package traces

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Priority classes. Traces with more classes map onto these two (see QoSPriority).
const (
	PriorityLow  int32 = 0
	PriorityHigh int32 = 1
	ClassLow           = "low"
	ClassHigh          = "high"
)

// MaxGPUsPerWorker is the largest worker: one worker never spans nodes, and GPU nodes hold at
// most 8 GPUs.
const MaxGPUsPerWorker = 8

// Synthesis parameters (docs/traces.md gives the reasoning for each).
const (
	// highPriorityShare is the share of jobs synthesized into the high class.
	highPriorityShare = 0.2
	// Epoch times are drawn log-uniformly in [minEpochTarget, maxEpochTarget]; the epoch
	// count is the job's duration over that, rounded, at least 1.
	minEpochTarget = time.Minute
	maxEpochTarget = time.Hour
	// minEpochTime is the shortest synthesized epoch (a job shorter than it has one epoch).
	minEpochTime = time.Second
)

// ModelInfo is one row of the per-model table that sizes checkpoints and datasets.
type ModelInfo struct {
	Name string
	// Params is the parameter count.
	Params int64
	// Dataset names the dataset the model is usually trained on; DatasetBytes is its size.
	Dataset      string
	DatasetBytes int64
}

// CheckpointBytes is the size of a checkpoint of the model: fp32 weights plus Adam's two
// moment buffers, 3 x 4 bytes per parameter.
func (m ModelInfo) CheckpointBytes() int64 { return m.Params * 4 * 3 }

const (
	imagenetBytes = 140_000_000_000 // ILSVRC-2012 training set, 1.28M images, ~140 GB
	cifar10Bytes  = 170_498_071     // cifar-10-python.tar.gz
)

// Models is the per-model table, sorted by name. Parameter counts are the published ones
// (torchvision model documentation for the vision networks; the papers otherwise) and are
// cited in docs/traces.md.
var Models = []ModelInfo{
	{"alexnet", 61_100_000, "imagenet", imagenetBytes},
	{"bert-base", 110_000_000, "wikipedia+bookcorpus", 16_000_000_000},
	{"bert-large", 340_000_000, "wikipedia+bookcorpus", 16_000_000_000},
	{"dcgan", 6_342_272, "celeba", 1_440_000_000},
	{"googlenet", 6_600_000, "imagenet", imagenetBytes},
	{"gpt2-medium", 355_000_000, "webtext", 40_000_000_000},
	{"inception3", 27_200_000, "imagenet", imagenetBytes},
	{"inception4", 42_700_000, "imagenet", imagenetBytes},
	{"lstm", 66_000_000, "ptb", 5_000_000},
	{"mobilenet-v2", 3_500_000, "imagenet", imagenetBytes},
	{"pointnet", 3_500_000, "modelnet40", 435_000_000},
	{"resnet101", 44_500_000, "imagenet", imagenetBytes},
	{"resnet152", 60_200_000, "imagenet", imagenetBytes},
	{"resnet18", 11_700_000, "cifar10", cifar10Bytes},
	{"resnet50", 25_600_000, "imagenet", imagenetBytes},
	{"transformer", 65_000_000, "wmt14-en-de", 1_400_000_000},
	{"vgg11", 132_900_000, "imagenet", imagenetBytes},
	{"vgg16", 138_400_000, "imagenet", imagenetBytes},
	{"vgg19", 143_700_000, "imagenet", imagenetBytes},
}

// unknownModel sizes a model the table does not list: the size of resnet50 on ImageNet, the
// most common workload of the table.
var unknownModel = ModelInfo{Name: "", Params: 25_600_000, Dataset: "imagenet", DatasetBytes: imagenetBytes}

var modelIndex = func() map[string]ModelInfo {
	m := make(map[string]ModelInfo, len(Models))
	for _, mi := range Models {
		m[modelKey(mi.Name)] = mi
	}
	// Common spellings in the traces.
	m["inceptionv3"] = m["inception3"]
	m["inceptionv4"] = m["inception4"]
	m["gpt2m"] = m["gpt2medium"]
	return m
}()

// modelKey folds case and drops '-', '_', '.' and spaces: "GPT2-Medium" -> "gpt2medium".
func modelKey(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
}

// LookupModel returns the table row of a model name (any case and punctuation); ok is false
// for a model the table does not list, and the row is then the default size.
func LookupModel(name string) (ModelInfo, bool) {
	if mi, ok := modelIndex[modelKey(name)]; ok {
		return mi, true
	}
	return unknownModel, false
}

// SplitWorkers is the worker rule for a job whose trace does not say how its GPUs split:
// up to 8 GPUs run as one worker; more run as workers of the largest size <= 8 that divides
// the demand evenly (16 -> 2x8, 12 -> 2x6, 24 -> 3x8, 11 -> 11x1).
func SplitWorkers(gpus int32) (workers, perWorker int32) {
	if gpus <= 0 {
		return 0, 0
	}
	for per := int32(MaxGPUsPerWorker); per >= 1; per-- {
		if gpus%per == 0 {
			return gpus / per, per
		}
	}
	return gpus, 1
}

// jobDraws returns the job's own uniform draws in [0, 1): a PCG seeded by FNV-1a of the
// seed and the job ID, so a job's synthesized fields do not depend on read order or on the
// other jobs.
func jobDraws(seed int64, id string) (uModel, uEpoch, uPrio float64) {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := range 8 {
		h = (h ^ uint64(byte(uint64(seed)>>(8*i)))) * prime64
	}
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime64
	}
	pcg := rand.NewPCG(h, h^0x9e3779b97f4a7c15)
	u := func() float64 { return float64(pcg.Uint64()>>11) / (1 << 53) }
	return u(), u(), u()
}

// synthesize fills every field the trace left empty and flags it in j.Synthesized. The draws
// happen in a fixed order whatever is missing, so a field's value depends only on the seed
// and the job ID.
func synthesize(j *Job, seed int64) {
	uModel, uEpoch, uPrio := jobDraws(seed, j.ID)

	if j.Model == "" {
		j.Model = Models[int(uModel*float64(len(Models)))%len(Models)].Name
		j.Synthesized |= FieldSet(FieldModel)
	}
	mi, _ := LookupModel(j.Model)
	if j.Epochs == 0 {
		j.Epochs, j.EpochTime = splitEpochs(j.Duration, uEpoch)
		j.Synthesized |= FieldSet(FieldEpochs) | FieldSet(FieldEpochTime)
	}
	if j.DatasetBytes == 0 {
		j.DatasetBytes = mi.DatasetBytes
		j.Synthesized |= FieldSet(FieldDatasetBytes)
	}
	if j.CheckpointBytes == 0 {
		j.CheckpointBytes = mi.CheckpointBytes()
		j.Synthesized |= FieldSet(FieldCheckpointBytes)
	}
	if j.Workers == 0 || j.GPUsPerWorker == 0 {
		j.Workers, j.GPUsPerWorker = SplitWorkers(j.GPUs)
		j.Synthesized |= FieldSet(FieldWorkers)
	}
	if j.PriorityClass == "" {
		j.Priority, j.PriorityClass = PriorityLow, ClassLow
		if uPrio < highPriorityShare {
			j.Priority, j.PriorityClass = PriorityHigh, ClassHigh
		}
		j.Synthesized |= FieldSet(FieldPriority)
	}
	if j.GPUModel == "" {
		// Left empty (any model): a made-up requirement would make the job unplaceable on
		// clusters without that model.
		j.Synthesized |= FieldSet(FieldGPUModel)
	}
}

// splitEpochs divides a duration into epochs: a target epoch time drawn log-uniformly from
// [minEpochTarget, maxEpochTarget] by u, the count rounded from duration/target (at least 1,
// and small enough that an epoch lasts at least minEpochTime), and the epoch time
// duration/count, so Epochs*EpochTime is the duration to within Epochs nanoseconds.
func splitEpochs(d time.Duration, u float64) (int32, time.Duration) {
	if d <= minEpochTime {
		return 1, d
	}
	lo, hi := math.Log(float64(minEpochTarget)), math.Log(float64(maxEpochTarget))
	target := math.Exp(lo + u*(hi-lo))
	n := math.Round(float64(d) / target)
	n = math.Max(1, math.Min(n, math.Floor(float64(d)/float64(minEpochTime))))
	n = math.Min(n, math.MaxInt32)
	return int32(n), d / time.Duration(n)
}
