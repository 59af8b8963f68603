package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/events"
)

// batchWait is how long the writer lets events gather after the first one
// before it sends them: a busy proxy finishes thousands of requests a
// second, and a wake-up, a JSON frame and a system call for each put a
// goroutine hand-off beside every request. A person watching the tray
// cannot tell 10 ms; the queue (Options.QueueSize, 256 by default) holds
// what 25,000 requests a second bring in that time. It runs on the wall
// clock, like the other socket timing here.
const batchWait = 10 * time.Millisecond

// readLimit bounds what a client may send: nothing it sends means anything
// (messages are discarded), so anything big is a misbehaving peer.
const readLimit = 512

// serveEvents is the event websocket. The first message is a snapshot
// (type "snapshot", the status, and as id the last event id it reflects),
// then one message per event. With ?since=ID, and the hub still holding
// every event after ID, the snapshot is left out and the missed events come
// first instead. The handshake answer says which it will be (HeaderResume),
// the id where a replay ends (HeaderStart), and which proxy process this is
// (HeaderBoot). A client resuming passes the boot back as ?boot=, so an id
// from before a restart gets a snapshot, not a replay of the new process's
// unrelated events.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	resume, since, ok := h.resumeFrom(w, r)
	if !ok {
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		writeError(w, http.StatusBadRequest, "this is a websocket endpoint: connect with a websocket client (websocat, or the subpool client package)")
		return
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "the proxy is stopping; reconnect once it is back")
		return
	}
	h.streams.Add(1)
	h.mu.Unlock()
	defer h.streams.Done()

	// Subscribe before the upgrade so the handshake can say whether a
	// replay or a snapshot follows.
	subscribe := h.hub.Subscribe
	if resume {
		subscribe = h.hub.Resume
	}
	sub, replayed := subscribe(since, h.queue)
	defer sub.Close()
	first := "snapshot"
	if replayed {
		first = "replay"
	}
	held := &heldConn{}
	conn, err := h.upgrader.Upgrade(hijackHeld{w, held}, r, http.Header{
		HeaderBoot:   {h.hub.Boot()},
		HeaderResume: {first},
		HeaderStart:  {strconv.FormatUint(sub.Start(), 10)},
	})
	if err != nil {
		return // Upgrade has answered the client
	}
	defer conn.Close()

	readDone := make(chan struct{})
	go h.discardReads(conn, readDone)

	stop := make(chan struct{})
	defer close(stop)
	go h.closeWhenDone(conn, held, sub, stop)

	out := newEventWriter(conn, h.writeWait)

	if !replayed {
		// Taken after Subscribe: the snapshot may already show some of the
		// events that follow it, never miss one. Events are idempotent on
		// state, so a client applying one twice ends up right.
		st, err := h.backend.Status(r.Context())
		if err != nil {
			h.logf("admin: events: no snapshot: %v", err)
			return
		}
		snap := api.Event{ID: sub.Start(), Type: api.EventSnapshot, Time: h.clk.Now().UTC(), Snapshot: &st}
		if out.write(snap) != nil {
			return
		}
	}

	h.pump(conn, held, sub, out, readDone)
}

// pump writes the subscription's events to conn in batches and pings the
// client, until the subscription ends, the client stops reading or a
// write fails.
func (h *Handler) pump(conn *websocket.Conn, held *heldConn, sub *events.Subscription, out *eventWriter, readDone <-chan struct{}) {
	ping := time.NewTicker(h.pingPeriod)
	defer ping.Stop()
	gather := time.NewTimer(batchWait)
	gather.Stop()
	for {
		select {
		case e, ok := <-sub.C():
			if !ok {
				return // dropped or closed; closeWhenDone has said why
			}
			// Events that arrive while the timer runs queue up in the
			// subscription without waking this goroutine.
			gather.Reset(batchWait)
			select {
			case <-gather.C:
			case <-sub.Done():
			case <-readDone:
				return
			}
			if out.writeBatch(held, e, sub.C()) != nil {
				return
			}
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(h.writeWait)) != nil {
				return
			}
		case <-readDone:
			return
		}
	}
}

// resumeFrom reads ?since= and ?boot=: whether the client resumes, and
// after which event id. A since that is no id is answered with a 400 and
// ok false. A boot other than this process's means the client's ids are
// from before a restart, so it gets a snapshot instead.
func (h *Handler) resumeFrom(w http.ResponseWriter, r *http.Request) (resume bool, since uint64, ok bool) {
	q := r.URL.Query()
	// since=0 is a resume too: the reader holds a snapshot taken before
	// the first event. Only a missing since means a new reader.
	resume = q.Has("since")
	if resume {
		n, err := strconv.ParseUint(q.Get("since"), 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "since must be an event id (a whole number), as received in the id field")
			return false, 0, false
		}
		since = n
	}
	if boot := q.Get("boot"); boot != "" && boot != h.hub.Boot() {
		resume, since = false, 0
	}
	return resume, since, true
}

// writeBatch sends first and every event queued behind it, one message
// each, in as few socket writes as their size allows.
func (w *eventWriter) writeBatch(held *heldConn, first api.Event, more <-chan api.Event) error {
	held.hold()
	err := w.write(first)
	// Only what is queued now: a producer faster than the socket must not
	// keep the batch open for ever.
	for n := len(more); n > 0 && err == nil; n-- {
		e, ok := <-more
		if !ok {
			break
		}
		err = w.write(e)
	}
	if rerr := held.release(); err == nil {
		err = rerr
	}
	return err
}

// eventWriter sends events on one connection. It keeps its encoder and
// buffer from one message to the next, where WriteJSON makes a new
// Encoder for each and boxing the event into an interface copies it to
// the heap: on a busy proxy that was most of what the admin websocket
// allocated per request.
type eventWriter struct {
	conn *websocket.Conn
	wait time.Duration
	buf  bytes.Buffer
	enc  *json.Encoder
	ev   api.Event // what enc encodes: behind a pointer, without a heap copy each time
}

func newEventWriter(conn *websocket.Conn, wait time.Duration) *eventWriter {
	w := &eventWriter{conn: conn, wait: wait}
	w.enc = json.NewEncoder(&w.buf)
	return w
}

// write sends e as one text message, the bytes WriteJSON sent: an
// Encoder, not json.Marshal, for its trailing newline; NextWriter, not
// WriteMessage, which would send a message bigger than the connection's
// buffer as one frame where WriteJSON splits it.
func (w *eventWriter) write(e api.Event) error {
	w.ev = e
	w.buf.Reset()
	if err := w.enc.Encode(&w.ev); err != nil {
		return err
	}
	w.conn.SetWriteDeadline(time.Now().Add(w.wait))
	mw, err := w.conn.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	_, err1 := mw.Write(w.buf.Bytes())
	if err2 := mw.Close(); err1 == nil {
		err1 = err2
	}
	return err1
}

// discardReads is the connection's one reader. Clients have nothing to say;
// reading is still needed to process pongs and the close handshake, and to
// notice a peer that has gone silent (no pong within pongWait).
func (h *Handler) discardReads(conn *websocket.Conn, done chan<- struct{}) {
	defer close(done)
	conn.SetReadLimit(readLimit)
	conn.SetReadDeadline(time.Now().Add(h.pongWait))
	conn.SetPongHandler(func(string) error {
		return conn.SetReadDeadline(time.Now().Add(h.pongWait))
	})
	for {
		if _, _, err := conn.NextReader(); err != nil {
			return
		}
	}
}

// closeWhenDone closes the connection as soon as the hub drops the
// subscription or the handler closes. The writer cannot be relied on for
// this: with a peer that does not read, it sits in a socket write for up to
// writeWait, and the peer should learn at once that it must resync.
func (h *Handler) closeWhenDone(conn *websocket.Conn, held *heldConn, sub *events.Subscription, stop <-chan struct{}) {
	var code int
	var text string
	select {
	case <-stop:
		return
	case <-sub.Done():
		if !sub.Dropped() {
			return
		}
		h.logf("admin: event listener fell behind (its queue of %d events filled); disconnected", h.queue)
		code, text = websocket.ClosePolicyViolation, "fell behind; reconnect with ?since=<last id received>"
	case <-h.closing:
		code, text = websocket.CloseGoingAway, "proxy stopping; reconnect with ?since=<last id received>"
	}
	// Best effort: a peer that does not read has no room for the frame
	// either, and then the deadline ends the attempt.
	conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(h.writeWait))
	held.flush() // the writer may be holding a batch, the close frame in it
	conn.Close()
}
