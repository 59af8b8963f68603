package daemon

import "testing"

// Memory goes back once a load has ended and nothing was in flight for
// idleChecks checks in a row, and once more at lateChecks (when the load's
// idle connections have closed); a request in between starts the count
// again, and a process that served nothing is left alone.
func TestMemoryGoesBackWhenIdle(t *testing.T) {
	var m memRelease
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
		if got := m.check(s.inFlight); got != s.want {
			t.Fatalf("step %d (in flight %d): release %v, want %v", i, s.inFlight, got, s.want)
		}
	}
}
