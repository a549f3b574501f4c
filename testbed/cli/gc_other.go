//go:build !linux

package cli

// totalMemory returns 0: the machine's memory is not read on this system, and simulate
// sets no memory limit.
func totalMemory() uint64 { return 0 }
