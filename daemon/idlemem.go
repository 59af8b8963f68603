package daemon

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory back after a load. The heap a burst of streams grew stays mapped
// once they end: with nothing allocating, no collection comes to free the
// dead streams' buffers, and the runtime's scavenger returns free memory
// slowly: a minute after 500 slow streams the bare proxy still holds its
// peak (docs/benchmarks.md, "The idle memory release"). A background
// service on a laptop should hold what it needs, so once a load has ended
// and nothing has been in flight for a while, a collection runs and the
// heap it frees goes back to the system. (The free heap is no guide before
// that collection: the dead streams' buffers still count as objects until
// one runs.)
//
// When: once, late, after an ordinary load (lateChecks quiet checks,
// after the kept-alive connections the load left have closed with their
// buffers), so that a person's next burst finds its heap still there.
// Early too (idleChecks) after a load that grew memory by bigHeld or more
// over what was held after the last release.
//
// A load is seen by a request in flight at a check, or by the memory held
// grown by heldGrowth since memory last went back: a burst shorter than
// the time between two checks.
const (
	idleCheckEvery = 5 * time.Second
	// idleChecks in a row with nothing in flight before memory goes back
	// early: a pause between two bursts keeps the heap for the next one.
	idleChecks = 3
	// lateChecks: the release after every load, once the kept-alive
	// connections it left have closed (the server's idle timeout).
	lateChecks = 9
	// heldGrowth is how much more memory than after the last release
	// counts as a load: above what an idle proxy's own work (the state
	// file, the history, a usage poll) moves it by, below what a burst of
	// a hundred streams grows it by.
	heldGrowth = 16 << 20
	// bigHeld above what was kept is too much to hold for lateChecks: a
	// request body read whole near max_body (a 50 MB upload refused at
	// 32 MiB grows it by 32 MiB) or a burst of some hundred streams.
	bigHeld = 24 << 20
)

// memRelease is the idle watcher's state: how many checks in a row saw
// nothing in flight, whether a load was seen since memory last went back
// (a process that served nothing has nothing to give back) and whether it
// calls for an early release, what the runtime held then (kept), the most
// it held since a load was last seen (peak).
type memRelease struct {
	idle        int
	busy, early bool
	kept, peak  uint64
}

// check says, for what one check saw (requests in flight, memory held),
// whether to hand memory back now.
func (m *memRelease) check(inFlight int64, held uint64) bool {
	if inFlight > 0 {
		m.idle, m.busy, m.peak = 0, true, max(m.peak, held)
		return false
	}
	if held > max(m.kept, m.peak)+heldGrowth {
		// A load that came and went between two checks: its quiet
		// spell starts now.
		m.idle, m.busy, m.peak = 0, true, held
	}
	if m.busy && max(held, m.peak) > m.kept+bigHeld {
		m.early = true
	}
	m.idle++
	if !m.busy {
		return false
	}
	if m.idle >= lateChecks {
		m.busy, m.early = false, false
		return true
	}
	return m.early && m.idle == idleChecks
}

// released records what the runtime held once memory went back.
func (m *memRelease) released(held uint64) { m.kept, m.peak = held, 0 }

// heldMemory is what the Go runtime has mapped and not handed back: the
// heap with its garbage and free spans, stacks and the runtime's own.
// Read from runtime/metrics, which stops nothing.
func heldMemory(s []metrics.Sample) uint64 {
	metrics.Read(s)
	total, released := s[0].Value, s[1].Value
	if total.Kind() != metrics.KindUint64 || released.Kind() != metrics.KindUint64 {
		return 0
	}
	return total.Uint64() - released.Uint64()
}

// releaseWhenIdle runs the watcher until ctx ends.
func (d *Daemon) releaseWhenIdle(ctx context.Context) {
	t := time.NewTicker(idleCheckEvery)
	defer t.Stop()
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	// What a proxy holds before its first request is the floor a load is
	// measured from: one that ended before the first check still shows.
	m := memRelease{kept: heldMemory(samples)}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.check(d.proxy.InFlight(), heldMemory(samples)) {
			// Two collections: what a load left in a sync.Pool (its
			// streams' readers, net/http's connection buffers) outlives
			// the first as the pool's victim, and only the second frees
			// it.
			runtime.GC()
			debug.FreeOSMemory()
			m.released(heldMemory(samples))
		}
	}
}
