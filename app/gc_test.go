package app

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTuneGCKeepsTheUsersGOMEMLIMIT(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOMEMLIMIT", "")
	// Not the runtime's default (no limit): a tuneGC that did nothing
	// must show.
	debug.SetMemoryLimit(math.MaxInt64)
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != serveMemoryLimit {
		t.Errorf("without GOMEMLIMIT: memory limit %d, want %d", got, serveMemoryLimit)
	}

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("with GOMEMLIMIT=1GiB: memory limit %d, want the user's", got)
	}
}
