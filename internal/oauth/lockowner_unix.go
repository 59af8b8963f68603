//go:build unix

package oauth

import (
	"errors"
	"strconv"
	"syscall"
)

func itoa(n int) string { return strconv.Itoa(n) }

// processGone reports that pid is proven not to be the process that
// started at start: no such process, a zombie, or another start time.
func processGone(pid int, start string) bool {
	if pid <= 1 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	f := procStatFields(pid)
	if len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
		return true
	}
	return start != "" && len(f) >= 20 && f[19] != start
}
