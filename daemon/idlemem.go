package daemon

import (
	"context"
	"runtime/debug"
	"time"
)

// Memory back after a load. With the collector's target at 400 (app's
// tuneGC) the heap a burst of streams grew stays mapped once they end:
// with nothing allocating, no collection comes to give it back, and the
// runtime's scavenger returns it slowly (issue 27: RSS stayed at its
// 98 MiB peak a minute after 200 streams ended, from 17 MiB idle). A
// background service on a laptop should hold what it needs, so once a
// load has ended and nothing has been in flight for a while, a collection
// runs and the heap it frees goes back to the system. (The free heap is no
// guide before that collection: the dead streams' buffers still count as
// objects until one runs.)
const (
	idleCheckEvery = 5 * time.Second
	// idleChecks in a row with nothing in flight before memory goes back:
	// a pause between two bursts keeps the heap for the next one.
	idleChecks = 3
	// lateChecks: once more, after the kept-alive connections the load
	// left have closed (the server's IdleTimeout, 30 s), with their
	// buffers.
	lateChecks = 9
)

// memRelease is the idle watcher's state: how many checks in a row saw
// nothing in flight, and whether a request was seen since (a process that
// served nothing has nothing to give back).
type memRelease struct {
	idle int
	busy bool
}

// check says, for what one check saw, whether to hand memory back now:
// at idleChecks and at lateChecks checks of a quiet spell after a load.
func (m *memRelease) check(inFlight int64) bool {
	if inFlight > 0 {
		m.idle, m.busy = 0, true
		return false
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

// releaseWhenIdle runs the watcher until ctx ends.
func (s *Daemon) releaseWhenIdle(ctx context.Context) {
	t := time.NewTicker(idleCheckEvery)
	defer t.Stop()
	var m memRelease
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.check(s.proxy.InFlight()) {
			debug.FreeOSMemory()
		}
	}
}
