// Package events is the event hub: every decision the proxy and the pool
// make goes through Emit, gets an id and a time, lands in a ring buffer that
// answers "what happened since id N", and is handed to live subscribers
// (the admin websocket connections).
//
// The one rule: Emit never waits for a listener. Each subscriber has a
// bounded queue; one that is full is dropped on the spot and counted, and
// its reader reconnects with the last id it saw (see Since). This is
// gorilla's chat hub backpressure with Syncthing's ring buffer for resync.
package events

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Defaults for NewHub and Subscribe.
const (
	DefaultRingSize = 1024
	DefaultQueue    = 256
)

// Hub fans events out to subscribers and keeps the most recent ones.
// All methods are safe for concurrent use.
type Hub struct {
	clk  clock.Clock
	boot string

	// mu guards everything below. It is held across delivery to every
	// subscriber; delivery is a non-blocking channel send, so the hold is
	// short, and it is what makes Subscribe's replay-then-live atomic.
	mu      sync.Mutex
	ring    []api.Event // circular; ring[(head+i)%len] for i < n, oldest first
	head, n int
	lastID  uint64
	// A slice, not a map: Emit walks it for every event, and starting a
	// map iteration (it picks a random start) took a fifth of Emit's
	// time. Subscribers are few and come and go rarely.
	subs    []*Subscription
	dropped int64
}

var _ api.Emitter = (*Hub)(nil)

// NewHub returns a hub that keeps the last ringSize events (DefaultRingSize
// when ringSize <= 0) and stamps them with clk.
func NewHub(clk clock.Clock, ringSize int) *Hub {
	if clk == nil {
		clk = clock.Real{}
	}
	if ringSize <= 0 {
		ringSize = DefaultRingSize
	}
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand doc)
	return &Hub{
		clk:  clk,
		boot: hex.EncodeToString(b[:]),
		ring: make([]api.Event, ringSize),
	}
}

// Boot identifies this hub, and so this proxy process. Ids start again at 1
// when the proxy restarts; a reader that kept an id from the previous
// process presents it with the boot it came from, so that id is not taken
// for one of this process's.
func (h *Hub) Boot() string { return h.boot }

// Emit stamps e with the next id and, when e.Time is zero, the clock's
// time; records it; and hands it to every subscriber without blocking.
// Times go out in UTC whoever set them, so the stream reads the same from
// every producer.
func (h *Hub) Emit(e api.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Read the clock under the lock so that times never run backwards
	// against ids when several goroutines emit at once.
	if e.Time.IsZero() {
		e.Time = h.clk.Now()
	}
	e.Time = e.Time.UTC()
	h.lastID++
	e.ID = h.lastID
	if h.n < len(h.ring) {
		h.ring[(h.head+h.n)%len(h.ring)] = e
		h.n++
	} else {
		h.ring[h.head] = e
		h.head = (h.head + 1) % len(h.ring)
	}
	for i := 0; i < len(h.subs); {
		s := h.subs[i]
		select {
		case s.ch <- e:
			i++
		default:
			// Waiting here would let one stuck browser tab or frozen
			// tray stall every request the proxy serves.
			s.dropped = true
			h.dropped++
			h.removeLocked(s) // h.subs[i] is now the next one
		}
	}
}

// LastID is the id of the newest event, 0 before the first.
func (h *Hub) LastID() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastID
}

// Since returns the events newer than id, oldest first, and true; or nil
// and false when the ring no longer holds all of them (id is older than the
// oldest kept event allows) or id is from the future (the proxy restarted
// and ids began again). The slice is never nil on success.
func (h *Hub) Since(id uint64) ([]api.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sinceLocked(id)
}

func (h *Hub) sinceLocked(id uint64) ([]api.Event, bool) {
	if id > h.lastID {
		return nil, false
	}
	missing := h.lastID - id
	if missing > uint64(h.n) {
		return nil, false
	}
	out := make([]api.Event, 0, missing)
	for i := h.n - int(missing); i < h.n; i++ {
		out = append(out, h.ring[(h.head+i)%len(h.ring)])
	}
	return out, true
}

// Subscribe starts a subscription with room for queue pending events
// (DefaultQueue when queue <= 0).
//
// With since > 0 and the ring still covering it, the events after since
// are queued first (beyond the queue's room, so a long replay is not a
// drop) and replayed is true. Otherwise nothing is replayed, replayed is
// false, and the caller must send a fresh snapshot: Start is then the id
// that snapshot stands for. Replay and registration happen under one lock,
// so no event falls between them or arrives twice.
func (h *Hub) Subscribe(since uint64, queue int) (sub *Subscription, replayed bool) {
	return h.subscribe(since, since > 0, queue)
}

// Resume is Subscribe for a reader that has seen every event up to and
// including since, where since may be 0: a snapshot taken before the first
// event stands for id 0, and its reader wants the events after it, not
// another snapshot. Subscribe cannot tell that reader from a new one.
func (h *Hub) Resume(since uint64, queue int) (sub *Subscription, replayed bool) {
	return h.subscribe(since, true, queue)
}

func (h *Hub) subscribe(since uint64, resume bool, queue int) (*Subscription, bool) {
	if queue <= 0 {
		queue = DefaultQueue
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var backlog []api.Event
	var replayed bool
	if resume {
		backlog, replayed = h.sinceLocked(since)
	}
	s := &Subscription{
		hub:   h,
		ch:    make(chan api.Event, queue+len(backlog)),
		done:  make(chan struct{}),
		start: h.lastID,
	}
	for _, e := range backlog {
		s.ch <- e
	}
	h.subs = append(h.subs, s)
	return s, replayed
}

// Stats reports the live subscribers and how many have been dropped for
// falling behind since the hub started.
func (h *Hub) Stats() (subscribers int, dropped int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs), h.dropped
}

func (h *Hub) removeLocked(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	h.subs = slices.DeleteFunc(h.subs, func(x *Subscription) bool { return x == s })
	close(s.ch)
	close(s.done)
}

// Subscription is one reader's queue of events.
type Subscription struct {
	hub   *Hub
	ch    chan api.Event
	done  chan struct{}
	start uint64
	// guarded by hub.mu
	closed  bool
	dropped bool
}

// C delivers the events in id order. It is closed when the subscription is
// closed or dropped; events already queued can still be received.
func (s *Subscription) C() <-chan api.Event { return s.ch }

// Done is closed together with C. Unlike C it can be watched by a second
// goroutine without taking events from the reader, so a connection can be
// torn down at once while its writer is stuck on a slow socket.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Start is the hub's LastID at the moment of subscribing: the id a fresh
// snapshot taken after Subscribe stands for. Every event after it is on C.
func (s *Subscription) Start() uint64 { return s.start }

// Close ends the subscription. It is idempotent.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.removeLocked(s)
}

// Dropped reports whether the hub dropped this subscription because its
// queue was full.
func (s *Subscription) Dropped() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.dropped
}
