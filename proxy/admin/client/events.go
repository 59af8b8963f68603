package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// Synthetic event types Events delivers about the connection itself. They
// never come from the proxy, and carry no ID.
const (
	// EventOffline: the connection dropped or could not be made; Reason
	// says why. Sent once per outage, not once per retry; the next
	// snapshot means the stream is live again.
	EventOffline api.EventType = "offline"
	// EventUnauthorized: the token was rejected. Events stops after it.
	EventUnauthorized api.EventType = "unauthorized"
)

// Reconnect backoff bounds for Events.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// idleTimeout is how long a watcher waits for any frame before calling the
// connection dead. The proxy pings every 30s, so two missed pings and some
// slack: long enough for a busy proxy, short enough to notice a laptop that
// slept through the proxy's restart.
const idleTimeout = 75 * time.Second

// Watcher is one event websocket connection.
type Watcher struct {
	conn      *websocket.Conn
	boot      string
	start     uint64
	resumed   bool
	closeOnce sync.Once
	stopCtx   func() bool
}

// Watch opens the event stream. With since 0 the first event is a snapshot
// (Type api.EventSnapshot, ID the last event it reflects); with the id of
// the last event seen, the proxy replays what came after it, or sends a
// fresh snapshot when it no longer holds all of it. The watcher closes when
// ctx ends.
func (c *Client) Watch(ctx context.Context, since uint64) (*Watcher, error) {
	return c.watch(ctx, since, "", since > 0)
}

// WatchFrom is Watch for a reader resuming after a disconnect, having seen
// every event up to since (which may be 0: a snapshot taken before the
// first event). boot is the previous Watcher's Boot, so that if the proxy
// has restarted since (and its ids begun again) a snapshot comes instead
// of a wrong replay.
func (c *Client) WatchFrom(ctx context.Context, since uint64, boot string) (*Watcher, error) {
	return c.watch(ctx, since, boot, true)
}

func (c *Client) watch(ctx context.Context, since uint64, boot string, resume bool) (*Watcher, error) {
	q := url.Values{}
	if resume {
		q.Set("since", strconv.FormatUint(since, 10))
	}
	if boot != "" {
		q.Set("boot", boot)
	}
	u := c.base("ws") + "events"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	d := c.Dialer
	if d == nil {
		dd := *websocket.DefaultDialer
		d = &dd
	}
	conn, res, err := d.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + c.Token}})
	if err != nil {
		if res != nil && errors.Is(err, websocket.ErrBadHandshake) {
			return nil, errorFrom(res)
		}
		return nil, err
	}
	w := &Watcher{
		conn:    conn,
		boot:    res.Header.Get(admin.HeaderBoot),
		resumed: res.Header.Get(admin.HeaderResume) == "replay",
	}
	w.start, _ = strconv.ParseUint(res.Header.Get(admin.HeaderStart), 10, 64)
	w.stopCtx = context.AfterFunc(ctx, func() { w.Close() })
	conn.SetReadLimit(64 << 20) // a snapshot of many credentials is big; a runaway is not
	conn.SetPingHandler(func(data string) error {
		conn.SetReadDeadline(time.Now().Add(idleTimeout))
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})
	return w, nil
}

// Boot identifies the proxy process this watcher is connected to.
func (w *Watcher) Boot() string { return w.boot }

// Start is the proxy's last event id when this connection began: the id
// of its snapshot, or, after a replay, the id of the last replayed event.
func (w *Watcher) Start() uint64 { return w.start }

// Resumed reports whether the proxy is replaying from the requested since
// rather than starting with a snapshot.
func (w *Watcher) Resumed() bool { return w.resumed }

// Next blocks for the next event. An error means the connection is over:
// closed by Close, by the proxy (a *websocket.CloseError when it said why,
// e.g. the reader fell behind), or lost.
func (w *Watcher) Next() (api.Event, error) {
	w.conn.SetReadDeadline(time.Now().Add(idleTimeout))
	_, data, err := w.conn.ReadMessage()
	if err != nil {
		return api.Event{}, err
	}
	var e api.Event
	if err := json.Unmarshal(data, &e); err != nil {
		w.Close()
		return api.Event{}, err
	}
	return e, nil
}

// Close ends the connection. It is idempotent and may be called from any
// goroutine, including while Next blocks.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		if w.stopCtx != nil {
			w.stopCtx()
		}
		w.conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		w.conn.Close()
	})
	return nil
}

// Events streams the proxy's events until ctx ends, then closes the
// channel. It connects by itself and keeps reconnecting (backoff 250ms up
// to 5s), resuming from the last id it delivered. Every connection yields
// exactly one snapshot (Type api.EventSnapshot), and a snapshot is what
// marks the stream live:
//
//   - the first connection starts with the snapshot, then events;
//   - when a connection drops or cannot be made: one EventOffline per
//     outage, its Reason saying why;
//   - on reconnect, when the proxy still holds every missed event, those
//     come first (they happened while offline), then a fresh snapshot;
//     when it does not (the gap was too long, or the proxy restarted), the
//     fresh snapshot alone;
//   - a rejected token delivers EventUnauthorized and closes the channel:
//     retrying cannot fix it.
//
// A snapshot with id N reflects at least every event up to N, and may
// already reflect a few events that follow it; applying those again must
// be harmless (a counter may count one request twice until the next
// snapshot).
//
// A receiver that stops reading is eventually disconnected by the proxy
// and resumed like any other drop, so a slow receiver loses no events
// while the proxy holds them, and never slows the proxy down.
func (c *Client) Events(ctx context.Context) <-chan api.Event {
	ch := make(chan api.Event, 16)
	s := &stream{c: c, ctx: ctx, ch: ch}
	go s.run()
	return ch
}

// stream is the state Events keeps across connections.
type stream struct {
	c       *Client
	ctx     context.Context
	ch      chan<- api.Event
	last    uint64 // id of the last event delivered
	boot    string // the proxy process last connected to; "" before the first connection
	offline bool   // an EventOffline was delivered and no snapshot since
}

func (s *stream) deliver(e api.Event) bool {
	select {
	case s.ch <- e:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func (s *stream) run() {
	defer close(s.ch)
	backoff := minBackoff
	for s.ctx.Err() == nil {
		connected, err := s.once()
		if s.ctx.Err() != nil {
			return
		}
		if IsUnauthorized(err) {
			s.deliver(api.Event{Type: EventUnauthorized, Reason: err.Error()})
			return
		}
		if !s.offline {
			s.offline = true
			if !s.deliver(api.Event{Type: EventOffline, Reason: err.Error()}) {
				return
			}
		}
		if connected {
			backoff = minBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// once runs one connection until it fails. connected reports whether the
// connection was made (so the backoff starts over); err says why it ended.
func (s *stream) once() (connected bool, err error) {
	w, err := s.c.watch(s.ctx, s.last, s.boot, s.boot != "")
	if err != nil {
		return false, err
	}
	defer w.Close()
	s.boot = w.Boot()
	// A replay ends at the proxy's Start; the snapshot that follows it is
	// ours to fetch, since the proxy sends none with a replay.
	needSnapshot := w.Resumed()
	for {
		if needSnapshot && s.last >= w.Start() {
			needSnapshot = false
			st, err := s.c.Status(s.ctx)
			if err != nil {
				return true, fmt.Errorf("connection to the proxy lost: %w", err)
			}
			at := st.Now
			if at.IsZero() {
				at = time.Now()
			}
			if !s.emit(api.Event{ID: s.last, Type: api.EventSnapshot, Time: at.UTC(), Snapshot: &st}) {
				return true, s.ctx.Err()
			}
		}
		e, err := w.Next()
		if err != nil {
			return true, fmt.Errorf("connection to the proxy lost: %w", err)
		}
		if !s.emit(e) {
			return true, s.ctx.Err()
		}
	}
}

func (s *stream) emit(e api.Event) bool {
	s.last = e.ID
	if e.Type == api.EventSnapshot {
		s.offline = false
	}
	return s.deliver(e)
}
