//go:build !unix

package policies_test

import "time"

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }
