package daemon

import "testing"

// Memory goes back once the proxy has been idle for idleChecks checks in a
// row with much free heap, once per quiet spell; a request in between
// starts the count again, and a small free heap is not worth a collection.
func TestMemoryGoesBackWhenIdle(t *testing.T) {
	var m memRelease
	const much, little = idleFreeBytes * 4, idleFreeBytes / 4
	steps := []struct {
		inFlight int64
		free     uint64
		want     bool
	}{
		{3, much, false},   // a load
		{0, much, false},   // idle 1
		{0, much, false},   // idle 2
		{1, much, false},   // a request: the count starts again
		{0, much, false},   // idle 1
		{0, much, false},   // idle 2
		{0, much, true},    // idle 3: back to the system
		{0, much, false},   // once per quiet spell
		{2, much, false},   // the next load
		{0, little, false}, // idle, little free heap
		{0, little, false}, //
		{0, little, false}, // not worth a collection
		{0, much, true},    // it grew (a stream's buffers freed late)
	}
	for i, s := range steps {
		if got := m.check(s.inFlight, s.free); got != s.want {
			t.Fatalf("step %d (in flight %d, free %d): release %v, want %v", i, s.inFlight, s.free, got, s.want)
		}
	}
}
