package daemon

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// The floor lifts the goal only for a crowd on a small live heap, to
// crowdHeap a request in flight.
func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name     string
		live     uint64
		inFlight int64
		want     int
	}{
		{"nothing in flight", 6 * mib, 0, 100},
		{"fewer than crowdFrom", 6 * mib, crowdFrom - 1, 100},
		{"the c32 round: base's goal is above the floor", 10 * mib, 32, 100},
		{"256 streams on a small heap: the goal at 32 MiB", 6 * mib, 256, 433},
		{"the same on a heap twice the floor's half", 16 * mib, 256, 100},
		{"500 slow streams: their live heap is past the floor", 40 * mib, 512, 100},
		{"no live figure yet", 0, 256, 100},
		{"a crowd of 4096 on a small heap: the goal at crowdMax", 8 * mib, 4096, 700},
	} {
		if got := percentFor(100, c.live, c.inFlight); got != c.want {
			t.Errorf("%s: GOGC %d, want %d", c.name, got, c.want)
		}
	}
	if got := percentFor(50, 6*mib, 256); got != 433 {
		t.Errorf("from a base of 50: GOGC %d, want the floor's 433", got)
	}
}

// Told that the crowd grew, the floor only rises: the next burst passes
// crowdFrom on its way up while the last one's garbage still fills the
// heap, and a goal lowered then would bring on the collection the floor
// is for. After a collection it follows the crowd both ways.
func TestGrownOnlyRaises(t *testing.T) {
	const mib = 1 << 20
	if got := nextPercent(433, 100, 6*mib, crowdFrom, true); got != 433 {
		t.Errorf("a burst passing %d on its way up: GOGC %d, want it kept at 433", crowdFrom, got)
	}
	if got := nextPercent(150, 100, 6*mib, 256, true); got != 433 {
		t.Errorf("the crowd grown to 256: GOGC %d, want 433", got)
	}
	if got := nextPercent(433, 100, 6*mib, 0, false); got != 100 {
		t.Errorf("a collection after the crowd left: GOGC %d, want the base 100", got)
	}
	if got := nextPercent(433, 100, 6*mib, 128, false); got != 166 {
		t.Errorf("a collection with 128 in flight: GOGC %d, want 166", got)
	}
}

func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// untilGOGC runs collections until the floor's finalizer has set a GOGC
// that ok takes.
func untilGOGC(t *testing.T, why string, ok func(uint64) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(gogc()); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC %d", why, gogc())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// On the real runtime: a crowd lifts GOGC at once, collections keep it
// lifted while the crowd stays (the finalizer re-arms), the first one
// after it has gone puts it back, and stop puts it back too.
func TestFloorFollowsTheCrowd(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	var inFlight atomic.Int64
	g := newGCFloor(77, inFlight.Load)
	defer g.stop()
	runtime.GC() // a live heap figure to start from
	// 4096 requests: the floor at crowdMax, far above this test's live heap.
	inFlight.Store(4096)
	g.grown()
	if got := gogc(); got <= 77 {
		t.Fatalf("a crowd of 4096: GOGC %d, want above the base 77", got)
	}
	for range 3 {
		runtime.GC()
	}
	time.Sleep(10 * time.Millisecond)
	if got := gogc(); got <= 77 {
		t.Fatalf("collections while the crowd stays: GOGC %d, want it still lifted", got)
	}
	inFlight.Store(0)
	untilGOGC(t, "the crowd gone, want the base 77", func(p uint64) bool { return p == 77 })
	inFlight.Store(4096)
	untilGOGC(t, "a second crowd, seen only at a collection, want it lifted", func(p uint64) bool { return p > 77 })
	g.stop()
	if got := gogc(); got != 77 {
		t.Fatalf("stopped: GOGC %d, want the base 77", got)
	}
}
