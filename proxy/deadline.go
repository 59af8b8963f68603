package proxy

// Stream deadlines: an upstream that sends its headers and then nothing,
// or goes quiet mid-stream, is cut off instead of holding the client for
// ever ([retry] first_event_timeout, idle_timeout).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// geminiCLIHead is the longest the first-event deadline waits for Gemini
// CLI on the Gemini wire. A Gemini stream has no preamble, so subpool
// holds even its status line until the first chunk, and Gemini CLI gives
// up on headers at 60 s (undici headersTimeout, 0.61.0) and asks again by
// itself, to a credential subpool has not yet learned is stalling.
const geminiCLIHead = 50 * time.Second

// deadlines are the run's stream deadlines: the policy's, the first
// event's cut to geminiCLIHead where Gemini CLI waits for headers.
func (rn *run) deadlines() (first, idle time.Duration) {
	first, idle = rn.pol.FirstEventTimeout, rn.pol.IdleTimeout
	if rn.tool == api.ToolGeminiCLI && rn.wire == WireGemini && first > geminiCLIHead {
		first = geminiCLIHead
	}
	return first, idle
}

// errStalled is the cause of an upstream request cut off by a deadline.
var errStalled = errors.New("the upstream stalled")

// stallKind says which deadline cut a body off.
type stallKind int32

const (
	notStalled stallKind = iota
	stalledFirst
	stalledIdle
)

// watchdog ends an upstream answer whose body goes quiet for too long,
// by cancelling the upstream request (the way net/http aborts a body
// read in flight). One clock timer per answer, not one per read: a read
// only stores the time, and the timer, when it fires early, sets itself
// again for the deadline that time gives.
type watchdog struct {
	body   io.ReadCloser // the upstream's; the watchdog stands in for it
	clk    clock.Clock
	cancel context.CancelCauseFunc
	idle   time.Duration
	first  time.Duration // 0 once the first content event came (or never asked)

	mu     sync.Mutex
	start  time.Time // the headers' arrival
	timer  clock.Timer
	done   bool
	last   atomic.Int64 // UnixNano of the last read that returned bytes
	kind   atomic.Int32 // stallKind
	active atomic.Bool  // first-event phase
}

// watch starts the deadlines on body, an answer's whose headers just
// came; the watchdog is to be read and closed in its place. first applies
// to an event stream until gotContent; idle to every body. Zero durations
// are no deadline; with both zero there is no watchdog.
func watch(clk clock.Clock, body io.ReadCloser, cancel context.CancelCauseFunc, first, idle time.Duration) *watchdog {
	if first <= 0 && idle <= 0 {
		return nil
	}
	now := clk.Now()
	w := &watchdog{body: body, clk: clk, cancel: cancel, idle: idle, first: first, start: now}
	w.last.Store(now.UnixNano())
	w.active.Store(first > 0)
	w.mu.Lock()
	w.timer = clk.AfterFunc(w.untilDeadline(now), w.check)
	w.mu.Unlock()
	return w
}

// untilDeadline is the time from now to the nearest deadline.
func (w *watchdog) untilDeadline(now time.Time) time.Duration {
	d := time.Duration(1<<63 - 1)
	if w.idle > 0 {
		d = time.Unix(0, w.last.Load()).Add(w.idle).Sub(now)
	}
	if w.active.Load() {
		d = min(d, w.start.Add(w.first).Sub(now))
	}
	return d
}

// check runs when the timer fires: the upstream is cut off if a deadline
// has passed, else the timer is set for the next one.
func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	now := w.clk.Now()
	if d := w.untilDeadline(now); d > 0 {
		w.timer.Reset(d)
		return
	}
	kind := stalledIdle
	if w.active.Load() && !now.Before(w.start.Add(w.first)) {
		kind = stalledFirst
	}
	w.kind.Store(int32(kind))
	w.done = true
	w.cancel(errStalled)
}

// read notes a read that returned bytes.
func (w *watchdog) read() {
	if w != nil {
		w.last.Store(w.clk.Now().UnixNano())
	}
}

// gotContent ends the first-event phase: from here only idle_timeout
// applies.
func (w *watchdog) gotContent() {
	if w != nil {
		w.active.Store(false)
	}
}

// stop ends the watch; the answer is over.
func (w *watchdog) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.done = true
	w.timer.Stop()
	w.mu.Unlock()
}

// stalled says which deadline cut the answer off, if one did.
func (w *watchdog) stalled() stallKind {
	if w == nil {
		return notStalled
	}
	return stallKind(w.kind.Load())
}

// reason is the stall in words, naming the setting that bounds it.
func (w *watchdog) reason() string {
	switch w.stalled() {
	case stalledFirst:
		return fmt.Sprintf("the upstream sent no content for %s after its headers (retry.first_event_timeout)", w.first)
	case stalledIdle:
		return fmt.Sprintf("the upstream sent nothing for %s mid-answer (retry.idle_timeout)", w.idle)
	}
	return ""
}

// Read passes the upstream body's bytes on and notes that they came.
func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.body.Read(p)
	if n > 0 {
		w.read()
	}
	return n, err
}

// Close closes the upstream body, ends the watch and the upstream
// request's context.
func (w *watchdog) Close() error {
	err := w.body.Close()
	w.stop()
	w.cancel(nil)
	return err
}
