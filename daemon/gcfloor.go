package daemon

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The collector's goal under a crowd. At serve's GOGC (app's tuneGC) the
// heap goal is twice the live heap, and subpool's live heap is small (6
// to 11 MiB) where a burst of streams allocates its connections' buffers
// all at once: 256 streams opened together outgrew the goal at once, and
// the collection that followed, with the assists it asks of every
// allocating stream, ran in the middle of their chunks. Issue 27's
// 256-stream series counted 0.75 to 1.00 collections a wave against the
// bare proxies' 0.66 (their live heap is larger), and the inter-chunk p99
// stayed 144 µs over the bares' mean; with GOGC 200 for the whole process
// the collections fell to the bares' count and the p99 to 77 µs under
// their mean. A higher GOGC for all would hold more after ordinary loads:
// the collector sweep measured 1.58x the bare proxy's RSS after the c32
// round at 150, over issue 27's 1.5x. So the goal has a floor that grows
// with the requests in flight, crowdHeap for each from crowdFrom on. It
// lifts the goal above twice the live heap only when many requests are
// open on a small heap (256 streams: 32 MiB), never under the c32 round
// (4 MiB) or 500 slow streams (whose live heap is past their floor), and
// it is gone at the first collection after the crowd has left. It is
// never more than crowdMax: past that, a crowd's own live heap sets a
// goal as large (and a crowd that waits allocates next to nothing). With
// the floor the collections fell to 0.08 to 0.33 a wave, and three 8-run
// series read the p99 -101, +74 and +84 µs over the bares' mean (their 24
// runs: +74; docs/benchmarks.md).
const (
	crowdHeap = 128 << 10
	crowdFrom = 32
	crowdMax  = 64 << 20
)

// percentFor is the GOGC that puts the goal at the floor for inFlight
// requests over a live heap of live bytes, or base when the floor is below
// base's own goal.
func percentFor(base int, live uint64, inFlight int64) int {
	if inFlight < crowdFrom || live == 0 {
		return base
	}
	floor := min(uint64(inFlight)*crowdHeap, crowdMax)
	if floor <= live+live*uint64(base)/100 {
		return base
	}
	return int((floor - live) * 100 / live)
}

// gcFloor keeps GOGC at nextPercent: told when the crowd grows (the
// proxy's Crowd option) and after every collection (a finalizer that
// re-arms itself), when the live heap is new and the crowd may have gone.
type gcFloor struct {
	base     int
	inFlight func() int64
	stopped  atomic.Bool

	mu   sync.Mutex
	set  int
	live []metrics.Sample
}

func newGCFloor(base int, inFlight func() int64) *gcFloor {
	g := &gcFloor{base: base, inFlight: inFlight, set: base,
		live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	g.arm()
	return g
}

// grown is the proxy's word that the crowd has grown: the goal may only
// rise. Lowering it here would undo the floor at the start of each burst
// (its requests pass crowdFrom on the way up, while the last burst's
// garbage still fills the heap) and bring on the very collection the
// floor is for.
func (g *gcFloor) grown() { g.retune(true) }

// collected re-tunes after a collection: the live heap is new, and the
// crowd may have gone.
func (g *gcFloor) collected() { g.retune(false) }

func (g *gcFloor) retune(raiseOnly bool) {
	if g.stopped.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	metrics.Read(g.live)
	var live uint64
	if v := g.live[0].Value; v.Kind() == metrics.KindUint64 {
		live = v.Uint64()
	}
	if p := nextPercent(g.set, g.base, live, g.inFlight(), raiseOnly); p != g.set {
		debug.SetGCPercent(p)
		g.set = p
	}
}

// nextPercent is the GOGC to hold after set: percentFor, unless only a
// rise is allowed and it is lower.
func nextPercent(set, base int, live uint64, inFlight int64, raiseOnly bool) int {
	p := percentFor(base, live, inFlight)
	if raiseOnly && p < set {
		return set
	}
	return p
}

// gcTick is the object whose finalizer runs once a collection has found
// it unreachable; it holds a pointer so that it is not one of the tiny
// allocations the runtime packs together (and frees together).
type gcTick struct{ g *gcFloor }

func (g *gcFloor) arm() {
	runtime.SetFinalizer(&gcTick{g}, func(t *gcTick) {
		if !t.g.stopped.Load() {
			t.g.collected()
			t.g.arm()
		}
	})
}

// stop puts GOGC back at base and ends the re-tuning.
func (g *gcFloor) stop() {
	g.stopped.Store(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.set != g.base {
		debug.SetGCPercent(g.base)
		g.set = g.base
	}
}
