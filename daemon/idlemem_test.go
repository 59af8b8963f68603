package daemon

import (
	"runtime/metrics"
	"testing"
)

// releases runs checks of an idle proxy (nothing in flight, memory held
// steady) and says at which of them memory went back,
// counting from 1.
func releases(m *memRelease, checks int, held uint64) []int {
	var at []int
	for i := 1; i <= checks; i++ {
		if m.check(0, held) {
			at = append(at, i)
			m.released(held)
		}
	}
	return at
}

// After an ordinary load memory goes back once, late: lateChecks checks
// with nothing in flight (when the load's idle connections have closed),
// so a burst that comes back sooner finds its heap. A request in between
// starts the count again, and a process that served nothing is left
// alone.
func TestMemoryGoesBackLateAfterALoad(t *testing.T) {
	const held = 10 << 20 // steady: only requests in flight tell of a load
	m := memRelease{kept: held}
	if at := releases(&m, 20, held); at != nil {
		t.Fatalf("idle from the start: memory went back at checks %v", at)
	}
	m.check(3, held) // a load
	for i := 1; i < lateChecks-1; i++ {
		if m.check(0, held) {
			t.Fatalf("quiet check %d after an ordinary load: memory went back early", i)
		}
	}
	m.check(1, held) // a request: the count starts again
	if at := releases(&m, 30, held); len(at) != 1 || at[0] != lateChecks {
		t.Fatalf("after the load: memory went back at quiet checks %v, want only %d", at, lateChecks)
	}
	m.check(2, held) // the next load
	if at := releases(&m, 30, held); len(at) != 1 || at[0] != lateChecks {
		t.Fatalf("after the next load: memory went back at quiet checks %v, want only %d", at, lateChecks)
	}
}

// A load no check saw in flight (a burst shorter than the time between
// two checks) still shows in the memory the runtime holds: grown by more
// than heldGrowth since memory last went back, it starts a quiet spell
// that ends with memory going back late, as after any ordinary load (a
// release between two such bursts would only make the next one grow the
// heap again); grown by more than bigHeld, early too. Less than
// heldGrowth is an idle proxy's own work and is left alone.
func TestMemoryGoesBackAfterALoadNoCheckSaw(t *testing.T) {
	const base = 12 << 20
	m := memRelease{kept: base} // what the proxy held at its start
	if at := releases(&m, 10, base+heldGrowth/2); at != nil {
		t.Fatalf("an idle proxy's own work: memory went back at %v", at)
	}
	if at := releases(&m, 20, base+heldGrowth+4<<20); len(at) != 1 || at[0] != lateChecks {
		t.Fatalf("after a burst between two checks: memory went back at quiet checks %v, want only %d", at, lateChecks)
	}
	// releases leaves what it was held at as kept.
	if at := releases(&m, 20, m.kept+heldGrowth); at != nil {
		t.Fatalf("not more than heldGrowth: memory went back at %v", at)
	}
	// A burst, and another in its quiet spell: the spell starts again.
	kept := m.kept
	m.check(0, kept+heldGrowth+4<<20)
	m.check(0, kept+heldGrowth+4<<20)
	if at := releases(&m, 20, kept+2*heldGrowth+8<<20); len(at) != 2 || at[0] != idleChecks || at[1] != lateChecks {
		t.Fatalf("after a second burst in the quiet spell, past bigHeld: memory went back at quiet checks %v, want %d and %d", at, idleChecks, lateChecks)
	}
	if at := releases(&m, 20, m.kept+bigHeld+8<<20); len(at) != 2 || at[0] != idleChecks || at[1] != lateChecks {
		t.Fatalf("after a burst that grew memory by more than bigHeld: memory went back at quiet checks %v, want %d and %d", at, idleChecks, lateChecks)
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
// after it, and says when memory goes back: late after a load that grew
// it by less than bigHeld, early (and late) after one that grew it more.
func TestALoadsOwnMemoryKeepsItsQuietSpell(t *testing.T) {
	const base = 12 << 20
	for _, c := range []struct {
		name  string
		grown uint64
		want  []int
	}{
		{"a load that grew memory a little", bigHeld / 2, []int{lateChecks}},
		{"a load that grew memory a lot", bigHeld + 8<<20, []int{idleChecks, lateChecks}},
	} {
		m := memRelease{kept: base}
		for _, held := range []uint64{base + c.grown/3, base + c.grown} {
			if m.check(5, held) {
				t.Fatalf("%s: memory went back with requests in flight", c.name)
			}
		}
		at := releases(&m, 20, base+c.grown)
		if len(at) != len(c.want) || at[0] != c.want[0] || at[len(at)-1] != c.want[len(c.want)-1] {
			t.Fatalf("%s: memory went back at quiet checks %v, want %v", c.name, at, c.want)
		}
	}
}
