package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// script is the kind of sequence a rate-limited request produces.
func script() []api.Event {
	until := t0.Add(90 * time.Second)
	return []api.Event{
		{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "a1", Label: "work",
			Until: &until, Step: 2, Steps: 3, Scope: "model", Model: "claude-opus-4-1", Reason: "429: rate limit on this model"},
		{Type: api.EventRotated, Provider: "anthropic", From: "a1", To: "a2", Reason: "a1 cooling down"},
		{Type: api.EventWaitStarted, Provider: "anthropic", CredentialID: "a2", Kind: api.WaitCapacity,
			Model: "claude-opus-4-1", Reason: "529: overloaded"},
		{Type: api.EventWaitEnded, Provider: "anthropic", CredentialID: "a2", Kind: api.WaitCapacity,
			Model: "claude-opus-4-1", WaitMS: 4000, Outcome: "ready", Attempts: 3},
		{Type: api.EventReloginRequired, Provider: "openai", CredentialID: "o1", Label: "personal",
			Reason: "refresh token was already used: log in again"},
	}
}

func TestEventsScriptReachesClientInOrder(t *testing.T) {
	e := newEnv(t, 0, nil)
	// Earlier history: the snapshot must stand for it, not replay it.
	e.hub.Emit(api.Event{Type: api.EventProxyStarted})
	e.hub.Emit(api.Event{Type: api.EventCredentialAdded, CredentialID: "a1"})

	c, res := e.dial(t, "")
	if got := res.Header.Get(admin.HeaderResume); got != "snapshot" {
		t.Errorf("%s = %q, want snapshot", admin.HeaderResume, got)
	}
	snap := readEvent(t, c)
	if snap.Type != api.EventSnapshot || snap.ID != 2 || snap.Snapshot == nil {
		t.Fatalf("first message: type %q id %d snapshot %v; want snapshot, id 2", snap.Type, snap.ID, snap.Snapshot)
	}
	st, _ := e.backend.Status(context.Background())
	if got, want := jsonOf(t, snap.Snapshot), jsonOf(t, st); got != want {
		t.Errorf("snapshot\n got %s\nwant %s", got, want)
	}

	var want []api.Event
	for i, ev := range script() {
		e.clk.Advance(time.Second)
		want = append(want, stamped(ev, uint64(3+i), e.clk.Now()))
		e.hub.Emit(ev)
	}
	for _, w := range want {
		got := readEvent(t, c)
		if jsonOf(t, got) != jsonOf(t, w) {
			t.Errorf("event\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, w))
		}
	}
}

func TestEventsResumeWithSince(t *testing.T) {
	e := newEnv(t, 0, nil)
	c, res := e.dial(t, "")
	boot := res.Header.Get(admin.HeaderBoot)
	if boot != e.hub.Boot() {
		t.Fatalf("boot header %q, hub %q", boot, e.hub.Boot())
	}
	if s := readEvent(t, c); s.Type != api.EventSnapshot || s.ID != 0 {
		t.Fatalf("first message %q id %d", s.Type, s.ID)
	}
	evs := script()
	for _, ev := range evs[:2] {
		e.hub.Emit(ev)
	}
	var last uint64
	for range 2 {
		last = readEvent(t, c).ID
	}
	c.Close() // the client goes away mid-sequence

	for _, ev := range evs[2:] {
		e.hub.Emit(ev)
	}
	c2, res2 := e.dial(t, fmt.Sprintf("since=%d&boot=%s", last, boot))
	if got := res2.Header.Get(admin.HeaderResume); got != "replay" {
		t.Errorf("%s = %q, want replay", admin.HeaderResume, got)
	}
	for i, ev := range evs[2:] {
		got := readEvent(t, c2)
		if got.ID != last+1+uint64(i) || got.Type != ev.Type {
			t.Fatalf("replay %d: got id %d %q, want id %d %q", i, got.ID, got.Type, last+1+uint64(i), ev.Type)
		}
	}
	// Exactly once: the next message is the next live event, not a repeat.
	e.hub.Emit(api.Event{Type: api.EventCooldownEnded, CredentialID: "a1"})
	if got := readEvent(t, c2); got.ID != e.hub.LastID() || got.Type != api.EventCooldownEnded {
		t.Fatalf("after replay: got id %d %q, want id %d cooldown_ended", got.ID, got.Type, e.hub.LastID())
	}
}

func TestEventsSnapshotWhenReplayImpossible(t *testing.T) {
	e := newEnv(t, 8, nil)
	for range 20 {
		e.hub.Emit(api.Event{Type: api.EventRequestFinished, Status: 200})
	}
	tests := []struct {
		name, query string
	}{
		{"since older than the ring", "since=3"},
		{"since from the future", "since=999"},
		{"boot of another process", "since=18&boot=0000000000000000"},
		{"no since", ""},
	}
	for _, tt := range tests {
		c, res := e.dial(t, tt.query)
		if got := res.Header.Get(admin.HeaderResume); got != "snapshot" {
			t.Errorf("%s: %s = %q", tt.name, admin.HeaderResume, got)
		}
		if s := readEvent(t, c); s.Type != api.EventSnapshot || s.ID != e.hub.LastID() {
			t.Errorf("%s: first message %q id %d, want snapshot id %d", tt.name, s.Type, s.ID, e.hub.LastID())
		}
		e.hub.Emit(api.Event{Type: api.EventRotated})
		if got := readEvent(t, c); got.ID != e.hub.LastID() {
			t.Errorf("%s: live event id %d, want %d", tt.name, got.ID, e.hub.LastID())
		}
		c.Close()
	}
	// The same boot and a covered since does replay: the cases above
	// failed for the reason they name.
	c, _ := e.dial(t, fmt.Sprintf("since=%d&boot=%s", e.hub.LastID()-1, e.hub.Boot()))
	if got := readEvent(t, c); got.Type == api.EventSnapshot || got.ID != e.hub.LastID() {
		t.Errorf("covered since: got %q id %d", got.Type, got.ID)
	}
}

// A listener that never reads must neither stall Emit nor other
// listeners; the hub drops it and its connection is closed.
func TestEventsNeverReadingListenerIsDropped(t *testing.T) {
	const queue = 64
	e := newEnv(t, 0, func(o *admin.Options) {
		o.QueueSize = queue
		o.WriteWait = time.Second // how long the stuck write may hold the connection
	})

	bad := dialFixedWindow(t, e)
	defer bad.Close()
	good, _ := e.dial(t, "")
	readEvent(t, good) // snapshot
	waitFor(t, "both subscribed", func() bool { n, _ := e.hub.Stats(); return n == 2 })

	received := make(chan uint64, queue)
	goodErr := make(chan error, 1)
	go func() {
		for {
			var ev api.Event
			if err := good.ReadJSON(&ev); err != nil {
				goodErr <- err
				return
			}
			received <- ev.ID
		}
	}()

	// 2048 events of 8 KiB: 16 MiB, far more than the socket buffers
	// (256 KiB plus the server's send buffer, 4 MiB at most on Linux) and
	// the queue can hold for the never-reader.
	const total = 2048
	payload := strings.Repeat("x", 8<<10)
	var want uint64
	for want < total {
		// Batches smaller than the queue, in step with the good reader, so
		// only the never-reader can fall behind.
		for range queue / 2 {
			e.hub.Emit(api.Event{Type: api.EventRequestFinished, Reason: payload})
			want++
		}
		for i := uint64(0); i < queue/2; i++ {
			select {
			case id := <-received:
				if exp := want - queue/2 + 1 + i; id != exp {
					t.Fatalf("good listener got id %d, want %d", id, exp)
				}
			case err := <-goodErr:
				t.Fatalf("good listener lost its connection: %v", err)
			case <-time.After(hangGuard):
				t.Fatal("good listener stalled")
			}
		}
	}
	if n, dropped := e.hub.Stats(); n != 1 || dropped != 1 {
		t.Fatalf("hub: %d subscribers, %d dropped; want 1 and 1", n, dropped)
	}

	// The never-reader now finds what the sockets still held, then the
	// end; the guard deadline firing would mean the connection was left
	// open.
	readToEnd(t, bad)

	// And the good one is still live.
	e.hub.Emit(api.Event{Type: api.EventRotated})
	select {
	case id := <-received:
		if id != want+1 {
			t.Fatalf("good listener got id %d, want %d", id, want+1)
		}
	case err := <-goodErr:
		t.Fatalf("good listener lost its connection: %v", err)
	}
}

// dialFixedWindow subscribes with a fixed receive buffer, which keeps the
// kernel from absorbing the whole test; not much smaller, though: a
// closed socket's backlog to a tiny window trickles out by window probes,
// for minutes.
func dialFixedWindow(t *testing.T, e *env) *websocket.Conn {
	t.Helper()
	fixedWindow := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(256 << 10)
		}
		return c, err
	}}
	bad, _, err := fixedWindow.Dial(e.wsURL(""), http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

// readToEnd reads the never-reader's connection until it ends; the guard
// deadline firing would mean it was left open.
func readToEnd(t *testing.T, bad *websocket.Conn) {
	t.Helper()
	bad.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		_, _, err := bad.ReadMessage()
		if err == nil {
			continue
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			t.Fatalf("never-reading listener still connected: %v", err)
		}
		t.Logf("never-reader's connection ended: %v", err)
		break
	}
}

// A slow reader (reads, but later) is told why it was cut off.
func TestEventsFellBehindCloseFrame(t *testing.T) {
	e := newEnv(t, 0, func(o *admin.Options) { o.QueueSize = 4 })
	c, _ := e.dial(t, "")
	readEvent(t, c) // snapshot: the server's writer is now in its loop
	// Hold the server's writer inside a frame with more than its queue
	// behind: nothing is read until every event is emitted, and the first
	// event alone cannot fit the socket buffers.
	e.hub.Emit(api.Event{Type: api.EventRequestFinished, Reason: strings.Repeat("y", 32<<20)})
	for range 10 {
		e.hub.Emit(api.Event{Type: api.EventRotated})
	}
	if _, dropped := e.hub.Stats(); dropped != 1 {
		t.Fatalf("dropped = %d, want 1", dropped)
	}
	c.SetReadDeadline(time.Now().Add(hangGuard))
	var err error
	for err == nil {
		_, _, err = c.ReadMessage()
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "since") {
		t.Fatalf("read ended with %v; want a policy-violation close frame telling to reconnect with since", err)
	}
}

func TestEventsPingKeepsLiveClientsAndCutsSilentOnes(t *testing.T) {
	e := newEnv(t, 0, func(o *admin.Options) {
		o.PingPeriod = 50 * time.Millisecond
		o.PongWait = time.Second
	})
	silent, _ := e.dial(t, "") // never reads, so never answers a ping
	live, _ := e.dial(t, "")
	pings := make(chan struct{}, 100)
	live.SetPingHandler(func(data string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return live.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	events := make(chan api.Event, 10)
	go func() {
		for {
			var ev api.Event
			if live.ReadJSON(&ev) != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()
	<-events // snapshot
	for range 3 {
		select {
		case <-pings:
		case <-time.After(hangGuard):
			t.Fatal("no ping from the server")
		}
	}
	waitFor(t, "the silent client to be cut", func() bool { n, _ := e.hub.Stats(); return n == 1 })
	silent.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		if _, _, err := silent.ReadMessage(); err != nil {
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				t.Fatal("silent client's connection left open")
			}
			break
		}
	}
	// The live client outlasted the silent one's pong wait.
	e.hub.Emit(api.Event{Type: api.EventRotated})
	if ev, ok := <-events; !ok || ev.Type != api.EventRotated {
		t.Fatalf("live client: got %v, %v", ev.Type, ok)
	}
}

func TestCloseDisconnectsListeners(t *testing.T) {
	e := newEnv(t, 0, nil)
	var conns []*websocket.Conn
	for range 3 {
		c, _ := e.dial(t, "")
		readEvent(t, c)
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.h.Close() })
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(hangGuard))
		_, _, err := c.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("read ended with %v, want going-away close", err)
		}
	}
	wg.Wait()
	if n, _ := e.hub.Stats(); n != 0 {
		t.Errorf("%d subscribers left after Close", n)
	}
	_, res, err := websocket.DefaultDialer.Dial(e.wsURL(""), http.Header{"Authorization": {"Bearer " + token}})
	if err == nil || res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial after Close: %v, %v; want 503", err, res)
	}
	// REST still answers, for a last status.
	if res := e.request(t, "GET", "status", "", nil); res.StatusCode != 200 {
		t.Errorf("status after Close: %d", res.StatusCode)
	}
}
