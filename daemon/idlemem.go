package daemon

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory back after a load. With the collector's target above the default
// (app's tuneGC) the heap a burst of streams grew stays mapped once they
// end: with nothing allocating, no collection comes to give it back, and
// the runtime's scavenger returns it slowly (issue 27: RSS stayed at its
// 98 MiB peak a minute after 200 streams ended, from 17 MiB idle). A
// background service on a laptop should hold what it needs, so once a
// load has ended and nothing has been in flight for a while, a collection
// runs and the heap it frees goes back to the system. (The free heap is no
// guide before that collection: the dead streams' buffers still count as
// objects until one runs.)
//
// A load is seen in two ways: a request in flight at a check, or the
// memory the runtime holds grown by heldGrowth since memory last went
// back. The second catches what a check every few seconds misses: one
// large request between two checks (issue 27: a 50 MB chunked upload
// refused at max_body took RSS from 98 to 173 MiB, and it stayed).
const (
	idleCheckEvery = 5 * time.Second
	// idleChecks in a row with nothing in flight before memory goes back:
	// a pause between two bursts keeps the heap for the next one.
	idleChecks = 3
	// lateChecks: once more, after the kept-alive connections the load
	// left have closed (the server's IdleTimeout, 30 s), with their
	// buffers.
	lateChecks = 9
	// heldGrowth is how much more memory than after the last release
	// counts as a load: above what an idle proxy's own work (the state
	// file, the history, a usage poll) moves it by, below what one large
	// body costs.
	heldGrowth = 16 << 20
)

// memRelease is the idle watcher's state: how many checks in a row saw
// nothing in flight, whether a load was seen since memory last went back
// (a process that served nothing has nothing to give back), what the
// runtime held then (kept), and the most it held since a load was last
// seen (peak).
type memRelease struct {
	idle       int
	busy       bool
	kept, peak uint64
}

// check says, for what one check saw (requests in flight, memory held),
// whether to hand memory back now: at idleChecks and at lateChecks checks
// of a quiet spell after a load.
func (m *memRelease) check(inFlight int64, held uint64) bool {
	if inFlight > 0 {
		m.idle, m.busy, m.peak = 0, true, max(m.peak, held)
		return false
	}
	if held > max(m.kept, m.peak)+heldGrowth {
		// A load that came and went between two checks: the quiet
		// spell after it starts now.
		m.idle, m.busy, m.peak = 0, true, held
	}
	m.idle++
	if !m.busy {
		return false
	}
	if m.idle >= lateChecks {
		m.busy = false
	}
	return m.idle == idleChecks || m.idle == lateChecks
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
func (s *Daemon) releaseWhenIdle(ctx context.Context) {
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
		if m.check(s.proxy.InFlight(), heldMemory(samples)) {
			debug.FreeOSMemory()
			m.released(heldMemory(samples))
		}
	}
}
