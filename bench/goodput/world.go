package goodput

import (
	"container/heap"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// World is the virtual clock and the event queue of one simulation run.
// Everything happens on one goroutine: an event runs, schedules others,
// returns; Run pops the next in time order (ties in scheduling order), so
// a run is deterministic for a seed. It implements clock.Clock, so the
// real pool keeps its cooldown timers on it.
type World struct {
	now time.Time
	q   eventQueue
	seq uint64
	// settle, when set, runs after every event, at its instant: a
	// strategy looks there for what the event made ready (a closed
	// pool.Changed channel), as a goroutine blocked on it would wake.
	settle func()
}

var _ clock.Clock = (*World)(nil)

// Epoch is where every run's virtual clock starts. Whole seconds matter:
// upstream reset times are sent with second precision.
var Epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newWorld() *World { return &World{now: Epoch} }

type event struct {
	at   time.Time
	seq  uint64
	fn   func()
	dead bool // stopped: skipped when popped
	idx  int
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int)    { q[i], q[j] = q[j], q[i]; q[i].idx = i; q[j].idx = j }
func (q *eventQueue) Push(x any)      { e := x.(*event); e.idx = len(*q); *q = append(*q, e) }
func (q *eventQueue) Pop() any        { old := *q; e := old[len(old)-1]; *q = old[:len(old)-1]; return e }
func (w *World) Now() time.Time       { return w.now }
func (w *World) since() time.Duration { return w.now.Sub(Epoch) }

// at schedules fn at t (never in the past).
func (w *World) at(t time.Time, fn func()) *event {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	e := &event{at: t, seq: w.seq, fn: fn}
	heap.Push(&w.q, e)
	return e
}

func (w *World) after(d time.Duration, fn func()) *event { return w.at(w.now.Add(d), fn) }

// run processes events until none is left.
func (w *World) run() { w.runUntil(func() bool { return false }) }

// runUntil processes events until done reports true or none is left.
func (w *World) runUntil(done func() bool) {
	for w.q.Len() > 0 && !done() {
		e := heap.Pop(&w.q).(*event)
		if e.dead {
			continue
		}
		w.now = e.at
		e.fn()
		if w.settle != nil {
			w.settle()
		}
	}
}

// NewTimer is clock.Clock's: the channel gets the time when d has passed.
func (w *World) NewTimer(d time.Duration) clock.Timer {
	t := &vtimer{w: w, c: make(chan time.Time, 1)}
	t.arm(d)
	return t
}

// AfterFunc is clock.Clock's: f runs as an event of its own, never inside
// the call that armed it (the pool arms timers holding its lock).
func (w *World) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &vtimer{w: w, f: f}
	t.arm(d)
	return t
}

type vtimer struct {
	w  *World
	ev *event
	c  chan time.Time
	f  func()
}

func (t *vtimer) arm(d time.Duration) {
	t.ev = t.w.after(d, func() {
		t.ev = nil
		if t.f != nil {
			t.f()
			return
		}
		select {
		case t.c <- t.w.now:
		default:
		}
	})
}

func (t *vtimer) C() <-chan time.Time { return t.c }

func (t *vtimer) Stop() bool {
	if t.ev == nil || t.ev.dead {
		return false
	}
	t.ev.dead = true
	t.ev = nil
	return true
}

func (t *vtimer) Reset(d time.Duration) bool {
	was := t.Stop()
	t.arm(d)
	return was
}
