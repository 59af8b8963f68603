//go:build unix

package admin

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system. On a
// shared machine it varies far less than wall time between runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
