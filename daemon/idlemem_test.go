package daemon

import (
	"runtime/metrics"
	"testing"
)

// Memory goes back once a load has ended and nothing was in flight for
// idleChecks checks in a row, and once more at lateChecks (when the load's
// idle connections have closed); a request in between starts the count
// again, and a process that served nothing is left alone.
func TestMemoryGoesBackWhenIdle(t *testing.T) {
	const held = 10 << 20 // steady: only requests in flight tell of a load
	m := memRelease{kept: held}
	steps := []struct {
		inFlight int64
		want     bool
	}{
		{0, false}, // idle from the start: nothing to give back
		{0, false},
		{0, false},
		{0, false},
		{3, false}, // a load
		{0, false}, // idle 1
		{0, false}, // idle 2
		{1, false}, // a request: the count starts again
		{0, false}, // idle 1
		{0, false}, // idle 2
		{0, true},  // idle 3: back to the system
		{0, false}, // 4
		{0, false}, // 5
		{0, false}, // 6
		{0, false}, // 7
		{0, false}, // 8
		{0, true},  // 9: once more, the idle connections closed
		{0, false}, // then no more in this quiet spell
		{0, false},
		{2, false}, // the next load
		{0, false},
		{0, false},
		{0, true},
	}
	for i, s := range steps {
		if got := m.check(s.inFlight, held); got != s.want {
			t.Fatalf("step %d (in flight %d): release %v, want %v", i, s.inFlight, got, s.want)
		}
	}
}

// A load no check saw in flight (one large request between two checks,
// issue 27's 50 MB upload) still shows in the memory the runtime holds:
// grown by more than heldGrowth since memory last went back, it starts a
// quiet spell that ends with memory going back; less than that is an idle
// proxy's own work and is left alone.
func TestMemoryGoesBackAfterALoadNoCheckSaw(t *testing.T) {
	const base = 12 << 20
	m := memRelease{kept: base} // what the proxy held at its start
	steps := []struct {
		held     uint64
		want     bool
		released uint64 // what the runtime holds once memory went back
	}{
		{held: base},
		{held: base + heldGrowth/2}, // an idle proxy's own work
		{held: base + heldGrowth/2},
		{held: base + heldGrowth/2},
		{held: base + heldGrowth/2},
		{held: base + 40<<20}, // a large body came and went: quiet 1
		{held: base + 40<<20}, // 2
		{held: base + 40<<20, want: true, released: base + 1<<20}, // 3: back
		{held: base + 1<<20}, // 4
		{held: base + 1<<20},
		{held: base + 1<<20},
		{held: base + 1<<20},
		{held: base + 1<<20},                             // 8
		{held: base + 1<<20, want: true, released: base}, // 9: once more
		{held: base},
		{held: base + heldGrowth}, // not more than heldGrowth: no load
		{held: base + heldGrowth},
		{held: base + heldGrowth},
		{held: base + heldGrowth},
		{held: base + 40<<20},                             // another large body: quiet 1
		{held: base + 40<<20},                             // 2
		{held: base + 80<<20},                             // and one more, in the quiet spell: 1 again
		{held: base + 80<<20},                             // 2
		{held: base + 80<<20, want: true, released: base}, // 3: back
	}
	for i, s := range steps {
		got := m.check(0, s.held)
		if got != s.want {
			t.Fatalf("step %d (held %d MiB): release %v, want %v", i, s.held>>20, got, s.want)
		}
		if got {
			m.released(s.released)
		}
	}
}

// heldMemory reads the runtime's figures: more than nothing, less than
// everything it mapped.
func TestHeldMemoryIsRead(t *testing.T) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	held := heldMemory(s)
	if held == 0 || held > s[0].Value.Uint64() {
		t.Fatalf("held %d of %d mapped", held, s[0].Value.Uint64())
	}
}

// The memory a load seen in flight grew does not restart the quiet spell
// after it: memory goes back idleChecks checks after the load, not never.
func TestALoadsOwnMemoryKeepsItsQuietSpell(t *testing.T) {
	const base = 12 << 20
	m := memRelease{kept: base}
	for _, held := range []uint64{base + 20<<20, base + 60<<20} {
		if m.check(5, held) {
			t.Fatal("memory went back with requests in flight")
		}
	}
	for i, want := range []bool{false, false, true} {
		if got := m.check(0, base+70<<20); got != want {
			t.Fatalf("quiet check %d: release %v, want %v", i+1, got, want)
		}
	}
}
