package cli

import (
	"os"
	"runtime/debug"
)

// simulateGCPercent is the garbage collector's target while simulate runs. A simulation's
// heap is mostly long-lived job state that every collection traces again, and it grows with
// the trace and the number of policies run at once: on philly.csv (82,247 jobs) at 64x8
// under all eleven policies the default target (100) spent about 30% of the CPU collecting;
// at 300 the run took 233 s instead of 350 s on two cores, for 5.1 GB of memory instead of
// 3.2 GB (docs/simulator.md).
const simulateGCPercent = 300

// tuneGC sets the collector for a simulation unless the user set GOGC or GOMEMLIMIT:
// simulateGCPercent, with a soft memory limit of half the machine's memory (where it is
// known) so that the collector works harder only when memory gets short. It returns what
// it set, for the tests.
func tuneGC() (percent int, limit int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return -1, -1
	}
	limit = -1
	if total := totalMemory(); total > 0 {
		limit = int64(total / 2)
		debug.SetMemoryLimit(limit)
	}
	debug.SetGCPercent(simulateGCPercent)
	return simulateGCPercent, limit
}
