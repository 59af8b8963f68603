// Package clock is the one source of time for the pool, the proxy's waits
// and the event hub. Production code uses Real; tests use a Fake that fires
// due timers synchronously on Advance, so scenario tests never sleep.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock is the narrow slice of the time package that subpool needs.
type Clock interface {
	Now() time.Time
	// NewTimer is like time.NewTimer.
	NewTimer(d time.Duration) Timer
	// AfterFunc is like time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer that callers use.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Since is time.Since on c.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Sleep waits d on c, or until ctx is done. It returns ctx.Err() when the
// context ended first, so a client leaving mid-wait stops the wait at once.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (Real) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a manual clock. Advance moves time forward and fires every timer
// that falls due, in order, before it returns. The zero value is not usable;
// call NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	waiters []chan struct{}
}

var _ Clock = (*Fake)(nil)

// NewFake starts at start. Give start an explicit zone (UTC) so formatted
// times in test output do not depend on the machine.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(d, nil)
}

func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, fn)
}

func (f *Fake) add(d time.Duration, fn func()) *fakeTimer {
	f.mu.Lock()
	t := &fakeTimer{clock: f, when: f.now.Add(d), fn: fn, c: make(chan time.Time, 1)}
	f.armUnlock(t)
	if d <= 0 {
		f.Advance(0)
	}
	return t
}

// Advance moves the clock by d, firing due timers in time order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.AdvanceTo(target)
}

// AdvanceTo moves the clock to t (never backwards), firing due timers.
func (f *Fake) AdvanceTo(t time.Time) {
	for {
		f.mu.Lock()
		var next *fakeTimer
		for _, tm := range f.timers {
			if tm.active && !tm.when.After(t) && (next == nil || tm.when.Before(next.when)) {
				next = tm
			}
		}
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if next.when.After(f.now) {
			f.now = next.when
		}
		next.active = false
		f.removeLocked(next)
		now := f.now
		f.mu.Unlock()
		if next.fn != nil {
			next.fn()
		} else {
			select {
			case next.c <- now:
			default:
			}
		}
	}
}

// Pending reports how many timers are armed. Tests use it with
// BlockUntil to know a goroutine has started waiting.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pendingLocked()
}

func (f *Fake) pendingLocked() int {
	n := 0
	for _, t := range f.timers {
		if t.active {
			n++
		}
	}
	return n
}

// armUnlock arms t, releases f.mu and wakes every goroutine in waitUnlock,
// so that AdvanceToNextWaiter and BlockUntil look at the timers again. It
// requires f.mu.
func (f *Fake) armUnlock(t *fakeTimer) {
	t.active = true
	f.timers = append(f.timers, t)
	waiters := f.waiters
	f.waiters = nil
	f.mu.Unlock()
	for _, w := range waiters {
		close(w)
	}
}

// waitUnlock releases f.mu and waits until a timer is armed or ctx ends.
// It requires f.mu.
func (f *Fake) waitUnlock(ctx context.Context) error {
	w := make(chan struct{})
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AdvanceToNextWaiter blocks until some goroutine waits on a timer made
// by NewTimer (a sleep, not an AfterFunc callback), then moves the clock to
// that timer's deadline and fires it. Tests use it to let a request's own
// waits pass without running ahead to unrelated callbacks, such as a
// cooldown's end.
func (f *Fake) AdvanceToNextWaiter(ctx context.Context) error {
	for {
		f.mu.Lock()
		var next *fakeTimer
		for _, t := range f.timers {
			if t.active && t.fn == nil && (next == nil || t.when.Before(next.when)) {
				next = t
			}
		}
		if next != nil {
			when := next.when
			f.mu.Unlock()
			f.AdvanceTo(when)
			return nil
		}
		if err := f.waitUnlock(ctx); err != nil {
			return err
		}
	}
}

// BlockUntil returns once at least n timers are armed, or ctx ends.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if f.pendingLocked() >= n {
			f.mu.Unlock()
			return nil
		}
		if err := f.waitUnlock(ctx); err != nil {
			return err
		}
	}
}

func (f *Fake) removeLocked(t *fakeTimer) {
	for i, tm := range f.timers {
		if tm == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return
		}
	}
}

type fakeTimer struct {
	clock  *Fake
	when   time.Time
	fn     func()
	c      chan time.Time
	active bool // guarded by clock.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	was := t.active
	t.active = false
	f.removeLocked(t)
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	f := t.clock
	f.mu.Lock()
	was := t.active
	f.removeLocked(t)
	t.when = f.now.Add(d)
	f.armUnlock(t)
	return was
}
