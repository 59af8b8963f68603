package app

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTuneGCKeepsTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	// Neither the runtime's defaults (100, no limit) nor serve's: a tuneGC
	// that did nothing must show.
	debug.SetGCPercent(37)
	debug.SetMemoryLimit(math.MaxInt64)
	if said := tuneGC(); said != serveGCPercent {
		t.Errorf("without GOGC: tuneGC says %d, want %d for the daemon's crowd floor", said, serveGCPercent)
	}
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("without GOGC: collector target %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != serveMemoryLimit {
		t.Errorf("without GOMEMLIMIT: memory limit %d, want %d", got, serveMemoryLimit)
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(1 << 30)
	if said := tuneGC(); said != 0 {
		t.Errorf("with GOGC=50: tuneGC says %d, want 0 (the daemon leaves the user's collector alone)", said)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("with GOGC=50: collector target %d, want the user's 50", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("with GOMEMLIMIT=1GiB: memory limit %d, want the user's", got)
	}
}
