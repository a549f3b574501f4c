package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// LibraryName is the shared library the NVML backend loads at run time.
const LibraryName = "libnvidia-ml.so.1"

// NVML reads GPUs through the NVIDIA Management Library.
type NVML struct {
	lib nvml.Interface
}

var _ Backend = (*NVML)(nil)

// OpenNVML loads libnvidia-ml and initializes NVML. It fails with an error that names the
// library when the library is missing (a node without the NVIDIA driver).
func OpenNVML() (*NVML, error) {
	return newNVML(nvml.New())
}

// newNVML initializes lib; tests pass a mock.
func newNVML(lib nvml.Interface) (*NVML, error) {
	if ret := initNVML(lib); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("nvml: %s not found (is the NVIDIA driver installed and the library on the loader path?)", LibraryName)
		}
		return nil, fmt.Errorf("nvml: init (%s): %s", LibraryName, errorString(lib, ret))
	}
	return &NVML{lib: lib}, nil
}

// initNVML calls Init, turning a panic of a library that cannot be loaded into an error.
func initNVML(lib nvml.Interface) (ret nvml.Return) {
	defer func() {
		if r := recover(); r != nil {
			ret = nvml.ERROR_LIBRARY_NOT_FOUND
		}
	}()
	return lib.Init()
}

func errorString(lib nvml.Interface, ret nvml.Return) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("NVML return code %d", int(ret))
		}
	}()
	return lib.ErrorString(ret)
}

// Devices implements Backend.
func (n *NVML) Devices() ([]Device, error) {
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, n.err("device count", ret)
	}
	devs := make([]Device, 0, count)
	for i := range count {
		d, err := n.device(i)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

func (n *NVML) device(i int) (Device, error) {
	h, ret := n.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return Device{}, n.err(fmt.Sprintf("device %d handle", i), ret)
	}
	d := Device{Index: i}
	var errs []error
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		errs = append(errs, n.err(fmt.Sprintf("device %d uuid", i), ret))
	}
	if d.Product, ret = h.GetName(); ret != nvml.SUCCESS {
		errs = append(errs, n.err(fmt.Sprintf("device %d name", i), ret))
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		errs = append(errs, n.err(fmt.Sprintf("device %d memory", i), ret))
	}
	d.MemoryTotal, d.MemoryUsed = mem.Total, mem.Used
	util, ret := h.GetUtilizationRates()
	switch ret {
	case nvml.SUCCESS:
		d.Utilization = util.Gpu
	case nvml.ERROR_NOT_SUPPORTED:
		// Some products (and MIG mode) do not report utilization; report 0.
	default:
		errs = append(errs, n.err(fmt.Sprintf("device %d utilization", i), ret))
	}
	return d, errors.Join(errs...)
}

func (n *NVML) err(what string, ret nvml.Return) error {
	return fmt.Errorf("nvml: %s: %s", what, errorString(n.lib, ret))
}

// Close shuts NVML down.
func (n *NVML) Close() error {
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return n.err("shutdown", ret)
	}
	return nil
}
