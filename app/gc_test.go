package app

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCKeepsTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	debug.SetGCPercent(100)
	tuneGC()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("without GOGC: collector target %d, want %d", got, serveGCPercent)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	tuneGC()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("with GOGC=50: collector target %d, want the user's 50", got)
	}
}
