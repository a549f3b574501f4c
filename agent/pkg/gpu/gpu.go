package gpu

import (
	"fmt"
	"strings"
)

// Device is one GPU as the agent reports it.
type Device struct {
	Index int
	UUID  string
	// Product is the product name as NVML reports it (for example "NVIDIA A100-SXM4-40GB").
	Product string
	// MemoryTotal and MemoryUsed are in bytes.
	MemoryTotal uint64
	MemoryUsed  uint64
	// Utilization is the percentage of time a kernel ran over the driver's last sample
	// period, 0..100.
	Utilization uint32
	// Namespace, Pod and Container name the container that holds the GPU, when the backend
	// knows it (the fake backend does; for real GPUs the attribution needs the kubelet's
	// pod-resources API, which the agent does not read yet).
	Namespace, Pod, Container string
}

// MemoryFree is the frame buffer not in use, in bytes.
func (d Device) MemoryFree() uint64 {
	if d.MemoryUsed > d.MemoryTotal {
		return 0
	}
	return d.MemoryTotal - d.MemoryUsed
}

// Backend lists a node's GPUs.
type Backend interface {
	// Devices returns the GPUs ordered by index.
	Devices() ([]Device, error)
	// Close releases the backend.
	Close() error
}

// GPU feature-discovery label keys.
const (
	LabelProduct = "nvidia.com/gpu.product"
	LabelCount   = "nvidia.com/gpu.count"
	LabelMemory  = "nvidia.com/gpu.memory"
)

// Labels renders the GPU feature-discovery labels for devs: the product (spaces replaced by
// dashes, as GPU feature discovery does), the count, and the memory of one GPU in MiB. A node
// without GPUs gets a count of 0 and no product or memory.
func Labels(devs []Device) map[string]string {
	l := map[string]string{LabelCount: fmt.Sprint(len(devs))}
	if len(devs) == 0 {
		return l
	}
	l[LabelProduct] = strings.ReplaceAll(strings.TrimSpace(devs[0].Product), " ", "-")
	l[LabelMemory] = fmt.Sprint(devs[0].MemoryTotal >> 20)
	return l
}
