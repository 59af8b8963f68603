package daemon

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory back after a load. With the collector's target at 400 (app's
// tuneGC) the heap a burst of streams grew stays mapped once they end:
// with nothing allocating, no collection comes to give it back, and the
// runtime's scavenger returns it slowly (issue 27: RSS stayed at its
// 98 MiB peak a minute after 200 streams ended, from 17 MiB idle). A
// background service on a laptop should hold what it needs, so once no
// request has been in flight for a while and the heap keeps much free
// memory, it is handed back to the system.
const (
	idleCheckEvery = 5 * time.Second
	// idleChecks in a row with nothing in flight before memory goes back:
	// a pause between two bursts keeps the heap for the next one.
	idleChecks = 3
	// idleFreeBytes is the free heap worth a forced collection.
	idleFreeBytes = 8 << 20
)

// memRelease is the idle watcher's state: how many checks in a row saw
// nothing in flight, and whether memory already went back since the last
// request.
type memRelease struct {
	idle     int
	released bool
}

// check says, for what one check saw, whether to hand memory back now.
func (m *memRelease) check(inFlight int64, freeHeap uint64) bool {
	if inFlight > 0 {
		m.idle, m.released = 0, false
		return false
	}
	m.idle++
	if m.released || m.idle < idleChecks || freeHeap < idleFreeBytes {
		return false
	}
	m.released = true
	return true
}

// releaseWhenIdle runs the watcher until ctx ends.
func (s *Daemon) releaseWhenIdle(ctx context.Context) {
	t := time.NewTicker(idleCheckEvery)
	defer t.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	var m memRelease
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		var free uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			free = sample[0].Value.Uint64()
		}
		if m.check(s.proxy.InFlight(), free) {
			debug.FreeOSMemory()
		}
	}
}
