//go:build !unix

package admin

import "time"

// processCPU is not measured here; the benchmark reports 0 for it.
func processCPU() time.Duration { return 0 }
