package app

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// EnvMemoryLimit names the variable that holds the container's memory limit in bytes
// (config/manager/manager.yaml sets it from limits.memory through the downward API).
const EnvMemoryLimit = "PICKYMAN_MEMORY_LIMIT"

// MemoryLimitFraction is the part of the container's memory limit the Go runtime's soft
// limit is set to; the rest is left to memory the runtime does not count (the binary's text,
// thread stacks outside Go) and to the time the collector takes to catch up.
const MemoryLimitFraction = 0.9

// MemoryLimit returns the soft memory limit for the Go runtime from the environment: none
// (0) when GOMEMLIMIT is set (the runtime reads it itself) or EnvMemoryLimit is unset, empty
// or 0; otherwise MemoryLimitFraction of EnvMemoryLimit (for a container without a limit the
// downward API gives the node's allocatable memory, which bounds it as well). Without it the
// collector lets the heap grow to twice what is live, and an operator whose caches hold
// 5,000 jobs comes near a 512 MiB container limit.
func MemoryLimit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	v := strings.TrimSpace(getenv(EnvMemoryLimit))
	if v == "" || v == "0" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", EnvMemoryLimit, v)
	}
	return int64(float64(n) * MemoryLimitFraction), nil
}

// SetMemoryLimit sets the Go runtime's soft memory limit from the environment (MemoryLimit)
// and returns it, 0 when it left the runtime's own.
func SetMemoryLimit(getenv func(string) string) (int64, error) {
	limit, err := MemoryLimit(getenv)
	if err != nil || limit == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(limit)
	return limit, nil
}
