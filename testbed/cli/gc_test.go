package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: simulate raises the collector's target and caps memory at half the machine's,
// and leaves both alone when the user set GOGC or GOMEMLIMIT.
func TestTuneGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	percent, limit := tuneGC()
	if got := debug.SetGCPercent(100); percent != simulateGCPercent || got != simulateGCPercent {
		t.Errorf("GC percent %d (returned %d), want %d", got, percent, simulateGCPercent)
	}
	want := int64(math.MaxInt64)
	if total := totalMemory(); total > 0 {
		want = int64(total / 2)
	}
	if got := debug.SetMemoryLimit(-1); got != want || (limit != -1 && limit != want) {
		t.Errorf("memory limit %d (returned %d), want %d", got, limit, want)
	}

	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env+" set", func(t *testing.T) {
			t.Setenv(env, "200")
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			if p, l := tuneGC(); p != -1 || l != -1 {
				t.Errorf("tuneGC() = %d, %d with %s set, want it to change nothing", p, l, env)
			}
			if got := debug.SetGCPercent(100); got != 100 {
				t.Errorf("GC percent %d with %s set, want it left at 100", got, env)
			}
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("memory limit %d with %s set, want it left unset", got, env)
			}
		})
	}
}
