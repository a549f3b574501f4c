package gpu

import (
	"crypto/sha256"
	"fmt"
	"sync"
)

// Fake is a backend for fake GPUs: a model, a count and a memory size from flags. Its
// utilization and memory use follow the load that Set assigns (the simulated training of the
// pod that holds the GPU); an idle GPU reports 0% and no memory used.
type Fake struct {
	mu   sync.Mutex
	devs []Device
}

var _ Backend = (*Fake)(nil)

// FakeConfig describes a node's fake GPUs.
type FakeConfig struct {
	// Node seeds the UUIDs, so that every fake node has distinct, stable GPU UUIDs.
	Node    string
	Product string
	Count   int
	// MemoryMiB is the frame buffer of one GPU.
	MemoryMiB uint64
}

// NewFake returns count idle GPUs of the given product.
func NewFake(c FakeConfig) (*Fake, error) {
	if c.Count < 0 || c.Product == "" || c.MemoryMiB == 0 && c.Count > 0 {
		return nil, fmt.Errorf("fake gpu: need a product, a count >= 0 and a memory size (got %q, %d, %d MiB)", c.Product, c.Count, c.MemoryMiB)
	}
	f := &Fake{devs: make([]Device, c.Count)}
	for i := range f.devs {
		f.devs[i] = Device{Index: i, UUID: fakeUUID(c.Node, i), Product: c.Product, MemoryTotal: c.MemoryMiB << 20}
	}
	return f, nil
}

// fakeUUID derives a stable GPU-prefixed UUID from the node name and index.
func fakeUUID(node string, i int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", node, i))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Set assigns a load to GPU index: utilization in percent (clamped to 0..100) and memory
// used as a fraction of the total (clamped to 0..1).
func (f *Fake) Set(index int, utilization float64, memFraction float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index < 0 || index >= len(f.devs) {
		return fmt.Errorf("fake gpu: no device %d (have %d)", index, len(f.devs))
	}
	d := &f.devs[index]
	d.Utilization = uint32(min(max(utilization, 0), 100))
	d.MemoryUsed = uint64(min(max(memFraction, 0), 1) * float64(d.MemoryTotal))
	return nil
}

// Assign records which container holds GPU index ("" names release it); an unassigned GPU
// goes idle.
func (f *Fake) Assign(index int, namespace, pod, container string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index < 0 || index >= len(f.devs) {
		return fmt.Errorf("fake gpu: no device %d (have %d)", index, len(f.devs))
	}
	d := &f.devs[index]
	d.Namespace, d.Pod, d.Container = namespace, pod, container
	if pod == "" {
		d.Utilization, d.MemoryUsed = 0, 0
	}
	return nil
}

// Devices implements Backend.
func (f *Fake) Devices() ([]Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Device(nil), f.devs...), nil
}

// Close implements Backend.
func (f *Fake) Close() error { return nil }
