package gpu

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// a100 returns a mock DGX A100 whose devices report the given utilization and memory use;
// every NVML call the backend makes is stubbed.
func a100(util []uint32, used []uint64) *server.Server {
	s := dgxa100.New()
	for i, h := range s.Devices {
		d := h.(*server.Device)
		d.MemoryInfo.Used = used[i]
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: util[i], Memory: util[i] / 2}, nvml.SUCCESS
		}
	}
	return s
}

const gib = uint64(1) << 30

func TestBackendsThroughInterface(t *testing.T) {
	util := []uint32{0, 10, 20, 30, 40, 50, 60, 100}
	used := []uint64{0, 1 * gib, 2 * gib, 3 * gib, 4 * gib, 5 * gib, 6 * gib, 7 * gib}
	tests := map[string]struct {
		open        func(t *testing.T) Backend
		wantCount   int
		wantProduct string
		wantTotal   uint64
		wantUtil    []uint32
		wantUsed    []uint64
	}{
		"nvml on a mock DGX A100": {
			open: func(t *testing.T) Backend {
				b, err := newNVML(a100(util, used))
				if err != nil {
					t.Fatal(err)
				}
				return b
			},
			wantCount: 8, wantProduct: "Mock NVIDIA A100-SXM4-40GB", wantTotal: 40 * gib,
			wantUtil: util, wantUsed: used,
		},
		"fake H100 node with load on two GPUs": {
			open: func(t *testing.T) Backend {
				f, err := NewFake(FakeConfig{Node: "n1", Product: "NVIDIA H100 80GB HBM3", Count: 4, MemoryMiB: 80 * 1024})
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Set(1, 93, 0.5); err != nil {
					t.Fatal(err)
				}
				if err := f.Set(3, 140, 2); err != nil { // clamped
					t.Fatal(err)
				}
				return f
			},
			wantCount: 4, wantProduct: "NVIDIA H100 80GB HBM3", wantTotal: 80 * gib,
			wantUtil: []uint32{0, 93, 0, 100}, wantUsed: []uint64{0, 40 * gib, 0, 80 * gib},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := tc.open(t)
			defer b.Close()
			devs, err := b.Devices()
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) != tc.wantCount {
				t.Fatalf("got %d devices, want %d", len(devs), tc.wantCount)
			}
			var gotUtil []uint32
			var gotUsed []uint64
			uuids := map[string]bool{}
			for i, d := range devs {
				if d.Index != i || d.Product != tc.wantProduct || d.MemoryTotal != tc.wantTotal {
					t.Errorf("device %d = %+v, want index %d, product %q, total %d", i, d, i, tc.wantProduct, tc.wantTotal)
				}
				if !strings.HasPrefix(d.UUID, "GPU-") || uuids[d.UUID] {
					t.Errorf("device %d UUID %q is not a distinct GPU- UUID", i, d.UUID)
				}
				uuids[d.UUID] = true
				gotUtil = append(gotUtil, d.Utilization)
				gotUsed = append(gotUsed, d.MemoryUsed)
				if d.MemoryFree() != d.MemoryTotal-d.MemoryUsed {
					t.Errorf("device %d free %d", i, d.MemoryFree())
				}
			}
			if diff := cmp.Diff(tc.wantUtil, gotUtil); diff != "" {
				t.Errorf("utilization (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUsed, gotUsed); diff != "" {
				t.Errorf("memory used (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNVMLErrors(t *testing.T) {
	tests := map[string]struct {
		lib     func() nvml.Interface
		wantErr string // substring of the error from open or Devices
	}{
		"library missing": {
			lib: func() nvml.Interface {
				return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
			},
			wantErr: LibraryName + " not found",
		},
		"init fails otherwise": {
			lib: func() nvml.Interface {
				return &mock.Interface{
					InitFunc:        func() nvml.Return { return nvml.ERROR_NO_PERMISSION },
					ErrorStringFunc: func(r nvml.Return) string { return "Insufficient Permissions" },
				}
			},
			wantErr: "init (" + LibraryName + "): Insufficient Permissions",
		},
		"utilization not supported reads as zero": {
			lib: func() nvml.Interface {
				s := a100(make([]uint32, 8), make([]uint64, 8))
				s.Devices[2].(*server.Device).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
					return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
				}
				return s
			},
		},
		"utilization failure is reported": {
			lib: func() nvml.Interface {
				s := a100(make([]uint32, 8), make([]uint64, 8))
				s.Devices[5].(*server.Device).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
					return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
				}
				s.ErrorStringFunc = func(r nvml.Return) string { return "GPU is lost" }
				return s
			},
			wantErr: "device 5 utilization: GPU is lost",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := newNVML(tc.lib())
			if err == nil {
				_, err = b.Devices()
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestOpenNVMLOnThisMachine loads the real library: on a node without the NVIDIA driver the
// error must name the library; on a GPU node the devices must list.
func TestOpenNVMLOnThisMachine(t *testing.T) {
	b, err := OpenNVML()
	if err != nil {
		if !strings.Contains(err.Error(), LibraryName) {
			t.Fatalf("error %q does not name %s", err, LibraryName)
		}
		return
	}
	defer b.Close()
	devs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.UUID == "" || d.MemoryTotal == 0 {
			t.Errorf("device %+v lacks a UUID or memory", d)
		}
	}
}

func TestFakeValidation(t *testing.T) {
	if _, err := NewFake(FakeConfig{Product: "", Count: 1, MemoryMiB: 1}); err == nil {
		t.Error("fake without a product accepted")
	}
	f, err := NewFake(FakeConfig{Product: "X", Count: 2, MemoryMiB: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Set(2, 1, 0); err == nil {
		t.Error("Set on a missing device accepted")
	}
	g, _ := NewFake(FakeConfig{Node: "other", Product: "X", Count: 2, MemoryMiB: 1024})
	a, _ := f.Devices()
	b, _ := g.Devices()
	if a[0].UUID == b[0].UUID {
		t.Error("two fake nodes share a GPU UUID")
	}
}

func TestLabels(t *testing.T) {
	tests := map[string]struct {
		devs []Device
		want map[string]string
	}{
		"no gpus": {want: map[string]string{LabelCount: "0"}},
		"eight A100": {
			devs: []Device{{Product: "NVIDIA A100-SXM4-40GB", MemoryTotal: 40 * gib}, {}, {}, {}, {}, {}, {}, {}},
			want: map[string]string{LabelCount: "8", LabelProduct: "NVIDIA-A100-SXM4-40GB", LabelMemory: "40960"},
		},
		"spaces become dashes": {
			devs: []Device{{Product: " Tesla V100 SXM2 32GB ", MemoryTotal: 32 * gib}},
			want: map[string]string{LabelCount: "1", LabelProduct: "Tesla-V100-SXM2-32GB", LabelMemory: "32768"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Labels(tc.devs), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}
