package client_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/subpool/subpool/internal/freeport"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/admintest"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
)

const token = "feedfacefeedfacefeedfacefeedface"

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// hangGuard only ever fires when the code under test hangs.
const hangGuard = 20 * time.Second

// proxy is a real admin handler on a loopback listener, with the knobs a
// test needs to misbehave like a real network: drop every connection,
// refuse event connections for a while, restart as a new process.
type proxy struct {
	t       *testing.T
	srv     *httptest.Server
	ln      *trackingListener
	backend *admintest.Backend
	handler atomic.Pointer[admin.Handler]
	hub     atomic.Pointer[events.Hub]
	gate    atomic.Bool // while set, event connections get 503
	opts    admin.Options
}

func newProxy(t *testing.T, ringSize int, tweak func(*admin.Options)) *proxy {
	t.Helper()
	p := &proxy{t: t, backend: &admintest.Backend{}}
	p.backend.SetStatus(api.Status{Version: "test", Providers: []api.ProviderStatus{{
		Name: "anthropic", Credentials: []api.CredentialStatus{{ID: "a1", Provider: "anthropic", Label: "work", State: api.StateReady}},
	}}})
	p.opts = admin.Options{Token: token, Backend: p.backend, Logf: t.Logf}
	if tweak != nil {
		tweak(&p.opts)
	}
	p.restart(ringSize, 0)
	mux := http.NewServeMux()
	mux.HandleFunc(admin.Prefix, func(w http.ResponseWriter, r *http.Request) {
		if p.gate.Load() && strings.HasSuffix(r.URL.Path, "/events") {
			http.Error(w, `{"error":"not now"}`, http.StatusServiceUnavailable)
			return
		}
		p.handler.Load().ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ln = &trackingListener{Listener: ln}
	p.srv = &httptest.Server{Listener: p.ln, Config: &http.Server{Handler: mux}}
	p.srv.Start()
	t.Cleanup(func() {
		p.handler.Load().Close()
		p.srv.Close()
	})
	return p
}

// restart replaces the handler and hub as a new proxy process would, with
// its ids starting over and already advanced by history events.
func (p *proxy) restart(ringSize, history int) {
	hub := events.NewHub(clock.NewFake(t0), ringSize)
	for range history {
		hub.Emit(api.Event{Type: api.EventRequestFinished})
	}
	o := p.opts
	o.Hub = hub
	p.hub.Store(hub)
	if old := p.handler.Swap(admin.New(o)); old != nil {
		old.Close()
	}
}

func (p *proxy) emit(e api.Event) uint64 {
	h := p.hub.Load()
	h.Emit(e)
	return h.LastID()
}

func (p *proxy) client() *client.Client {
	return &client.Client{Addr: p.ln.Addr().String(), Token: token}
}

// trackingListener can cut every connection it accepted, hijacked
// websockets included, which httptest.Server.CloseClientConnections does
// not reach.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) dropAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func next(t *testing.T, ch <-chan api.Event) api.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("event channel closed")
		}
		return e
	case <-time.After(hangGuard):
		t.Fatal("no event")
	}
	panic("unreachable")
}

func expect(t *testing.T, ch <-chan api.Event, typ api.EventType, id uint64) api.Event {
	t.Helper()
	e := next(t, ch)
	if e.Type != typ || e.ID != id {
		t.Fatalf("got %q id %d (%s), want %q id %d", e.Type, e.ID, e.Reason, typ, id)
	}
	return e
}

func TestMethodsRoundTrip(t *testing.T) {
	p := newProxy(t, 0, nil)
	p.backend.Login = api.LoginStart{Provider: "openai", URL: "https://auth.openai.com/authorize?x"}
	c := p.client()
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil || st.Version != "test" || len(st.Providers) != 1 || st.Providers[0].Credentials[0].ID != "a1" {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	id, err := c.AddCredential(ctx, api.AddCredential{Provider: "zai", Label: "main", Kind: api.KindAPIKey, Secret: map[string]string{"key": "sk-1"}})
	if err != nil || id != "zai-1" {
		t.Fatalf("AddCredential = %q, %v", id, err)
	}
	if got := p.backend.Added(); len(got) != 1 || got[0].Secret["key"] != "sk-1" {
		t.Errorf("backend got %+v", got)
	}
	for _, call := range []func(context.Context, string) error{c.Pause, c.Resume, c.Reset, c.RemoveCredential} {
		if err := call(ctx, "a1"); err != nil {
			t.Error(err)
		}
	}
	ls, err := c.StartLogin(ctx, "openai", "home")
	if err != nil || ls != p.backend.Login {
		t.Errorf("StartLogin = %+v, %v", ls, err)
	}
	for _, on := range []bool{true, false} {
		if err := c.SetOtherTools(ctx, "a1", on); err != nil {
			t.Error(err)
		}
	}
	want := []string{"AddCredential zai main api_key", "Pause a1", "Resume a1", "Reset a1", "RemoveCredential a1", "StartLogin openai home",
		"SetOtherTools a1 true", "SetOtherTools a1 false"}
	if got := p.backend.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls\n got %q\nwant %q", got, want)
	}

	// Errors keep the proxy's message and the typed cause.
	err = c.Pause(ctx, "nope/x")
	if !errors.Is(err, client.ErrNotFound) || !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), `"nope/x"`) {
		t.Errorf("Pause(missing) = %v", err)
	}
	var ce409 *client.Error
	p.backend.Err = map[string]error{
		"AddCredential": fmt.Errorf("%w: kind must be api_key or oauth", api.ErrBadRequest),
		"StartLogin":    fmt.Errorf("%w: zai has no login", api.ErrUnsupported),
	}
	if _, err := c.AddCredential(ctx, api.AddCredential{}); !errors.Is(err, api.ErrBadRequest) || err.Error() != "bad request: kind must be api_key or oauth" {
		t.Errorf("AddCredential(bad) = %v", err)
	}
	// A key or label the home already holds: 409, typed for the CLI.
	p.backend.Err["AddCredential"] = fmt.Errorf("%w: this key is already stored as anthropic-1a2b3c", api.ErrConflict)
	if _, err := c.AddCredential(ctx, api.AddCredential{}); !client.IsConflict(err) || !errors.As(err, &ce409) || ce409.Status != 409 ||
		!strings.Contains(err.Error(), "anthropic-1a2b3c") {
		t.Errorf("AddCredential(duplicate) = %#v", err)
	}
	if _, err := c.StartLogin(ctx, "zai", ""); !errors.Is(err, api.ErrUnsupported) {
		t.Errorf("StartLogin(zai) = %v", err)
	}
	if err := c.SetOtherTools(ctx, "zz", true); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("SetOtherTools(missing) = %v", err)
	}
	var ce *client.Error
	if err := c.Reset(ctx, "zz"); !errors.As(err, &ce) || ce.Status != 404 {
		t.Errorf("Reset(missing) = %#v", err)
	}
}

// headerTransport adds headers to every request: a test stand-in for a
// client the guard must refuse.
type headerTransport struct{ h http.Header }

func (tr headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range tr.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestTypedErrors(t *testing.T) {
	p := newProxy(t, 0, nil)
	ctx := context.Background()

	bad := p.client()
	bad.Token = "wrong"
	_, err := bad.Status(ctx)
	if !client.IsUnauthorized(err) || client.IsNotRunning(err) || !strings.Contains(err.Error(), "admin-token") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := bad.Watch(ctx, 0); !client.IsUnauthorized(err) {
		t.Errorf("Watch with wrong token: %v", err)
	}

	fromPage := p.client()
	fromPage.Transport = headerTransport{http.Header{"Origin": {"https://evil.example"}}}
	if _, err := fromPage.Status(ctx); !client.IsForbidden(err) || client.IsUnauthorized(err) {
		t.Errorf("from a page: %v", err)
	}

	// A real refusing address.
	gone := freeport.Addr(t)
	down := &client.Client{Addr: gone, Token: token}
	if _, err := down.Status(ctx); !client.IsNotRunning(err) || client.IsUnauthorized(err) {
		t.Errorf("nothing listening: %v", err)
	}
	if _, err := down.Watch(ctx, 0); !client.IsNotRunning(err) {
		t.Errorf("Watch, nothing listening: %v", err)
	}
	if client.IsNotRunning(errors.New("connection refused")) {
		t.Error("IsNotRunning matches on text")
	}
}

func TestAddrForms(t *testing.T) {
	p := newProxy(t, 0, nil)
	for _, addr := range []string{p.ln.Addr().String(), "http://" + p.ln.Addr().String(), "http://" + p.ln.Addr().String() + "/"} {
		c := &client.Client{Addr: addr, Token: token}
		if _, err := c.Status(context.Background()); err != nil {
			t.Errorf("Addr %q: %v", addr, err)
		}
		w, err := c.Watch(context.Background(), 0)
		if err != nil {
			t.Errorf("Watch, Addr %q: %v", addr, err)
			continue
		}
		w.Close()
	}
}

func TestWatch(t *testing.T) {
	p := newProxy(t, 0, nil)
	c := p.client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	p.emit(api.Event{Type: api.EventProxyStarted})
	w, err := c.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Resumed() || w.Start() != 1 || w.Boot() != p.hub.Load().Boot() {
		t.Errorf("Resumed %v, Start %d, Boot %q", w.Resumed(), w.Start(), w.Boot())
	}
	if e, err := w.Next(); err != nil || e.Type != api.EventSnapshot || e.Snapshot == nil || e.Snapshot.Version != "test" {
		t.Fatalf("first: %+v, %v", e, err)
	}
	id := p.emit(api.Event{Type: api.EventCredentialUpdated, CredentialID: "a1", State: api.StatePaused})
	if e, err := w.Next(); err != nil || e.ID != id || e.State != api.StatePaused {
		t.Fatalf("event: %+v, %v", e, err)
	}
	w.Close()
	w.Close()
	if _, err := w.Next(); err == nil {
		t.Error("Next after Close succeeded")
	}

	// Resuming from a covered id replays, with no snapshot.
	p.emit(api.Event{Type: api.EventRotated})
	w2, err := c.WatchFrom(ctx, id, w.Boot())
	if err != nil {
		t.Fatal(err)
	}
	if !w2.Resumed() || w2.Start() != id+1 {
		t.Errorf("Resumed %v, Start %d", w2.Resumed(), w2.Start())
	}
	if e, err := w2.Next(); err != nil || e.Type != api.EventRotated || e.ID != id+1 {
		t.Fatalf("replayed: %+v, %v", e, err)
	}

	// Cancelling the context ends a blocked Next.
	errc := make(chan error, 1)
	go func() { _, err := w2.Next(); errc <- err }()
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("Next returned an event after cancel")
		}
	case <-time.After(hangGuard):
		t.Fatal("Next still blocked after cancel")
	}
}

func TestEventsReconnectsAndResumes(t *testing.T) {
	p := newProxy(t, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := p.client().Events(ctx)

	expect(t, ch, api.EventSnapshot, 0)
	a := p.emit(api.Event{Type: api.EventCooldownStarted, CredentialID: "a1"})
	expect(t, ch, api.EventCooldownStarted, a)

	p.gate.Store(true) // hold the reconnect off until b and c exist
	p.ln.dropAll()
	if e := expect(t, ch, client.EventOffline, 0); !strings.Contains(e.Reason, "lost") {
		t.Errorf("offline reason %q", e.Reason)
	}
	b := p.emit(api.Event{Type: api.EventRotated})
	c := p.emit(api.Event{Type: api.EventCooldownEnded})
	p.gate.Store(false)
	// The missed events, once each and in order, then the snapshot that
	// marks the stream live again.
	expect(t, ch, api.EventRotated, b)
	expect(t, ch, api.EventCooldownEnded, c)
	if s := expect(t, ch, api.EventSnapshot, c); s.Snapshot == nil || s.Snapshot.Version != "test" {
		t.Errorf("resume snapshot %+v", s.Snapshot)
	}
	d := p.emit(api.Event{Type: api.EventTokenRefreshed})
	expect(t, ch, api.EventTokenRefreshed, d)

	// Nothing missed: the snapshot comes at once.
	p.ln.dropAll()
	expect(t, ch, client.EventOffline, 0)
	expect(t, ch, api.EventSnapshot, d)
	expect(t, ch, api.EventRotated, p.emit(api.Event{Type: api.EventRotated}))

	cancel()
	for range ch {
	}
}

func TestEventsResyncWhenGapTooLarge(t *testing.T) {
	p := newProxy(t, 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := p.client().Events(ctx)
	expect(t, ch, api.EventSnapshot, 0)
	expect(t, ch, api.EventRotated, p.emit(api.Event{Type: api.EventRotated}))

	p.gate.Store(true) // hold reconnects off while the ring overflows
	p.ln.dropAll()
	expect(t, ch, client.EventOffline, 0)
	var last uint64
	for range 10 {
		last = p.emit(api.Event{Type: api.EventRequestFinished})
	}
	p.gate.Store(false)
	// Refused retries in between do not repeat the offline event.
	snap := expect(t, ch, api.EventSnapshot, last)
	if snap.Snapshot == nil {
		t.Error("snapshot without status")
	}
	expect(t, ch, api.EventRotated, p.emit(api.Event{Type: api.EventRotated}))
}

func TestEventsAfterProxyRestart(t *testing.T) {
	p := newProxy(t, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := p.client().Events(ctx)
	expect(t, ch, api.EventSnapshot, 0)
	var last uint64
	for range 3 {
		last = p.emit(api.Event{Type: api.EventRequestFinished})
		expect(t, ch, api.EventRequestFinished, last)
	}
	// The new process has already passed the client's last id: only the
	// boot id tells its 4..8 apart from the old process's.
	p.restart(0, 8)
	expect(t, ch, client.EventOffline, 0)
	expect(t, ch, api.EventSnapshot, 8)
	expect(t, ch, api.EventRotated, p.emit(api.Event{Type: api.EventRotated}))
}

func TestEventsUnauthorizedStops(t *testing.T) {
	p := newProxy(t, 0, nil)
	c := p.client()
	c.Token = "wrong"
	ch := c.Events(context.Background())
	expect(t, ch, client.EventUnauthorized, 0)
	select {
	case e, ok := <-ch:
		if ok {
			t.Fatalf("event after unauthorized: %+v", e)
		}
	case <-time.After(hangGuard):
		t.Fatal("channel left open after unauthorized")
	}
}

func TestEventsNotRunningThenStarted(t *testing.T) {
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := (&client.Client{Addr: addr, Token: token}).Events(ctx)
	if e := expect(t, ch, client.EventOffline, 0); !strings.Contains(e.Reason, "refused") {
		t.Errorf("offline reason %q", e.Reason)
	}

	// The proxy comes up on that address: the retries find it.
	hub := events.NewHub(nil, 0)
	h := admin.New(admin.Options{Token: token, Hub: hub, Backend: &admintest.Backend{}})
	defer h.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	expect(t, ch, api.EventSnapshot, 0)
	cancel()
	for range ch {
	}
}

// A receiver that stops reading gets the proxy to drop the connection;
// the resume on reconnect still delivers every event exactly once.
func TestEventsSlowReceiverLosesNothing(t *testing.T) {
	p := newProxy(t, 4096, func(o *admin.Options) { o.QueueSize = 8 })
	c := p.client()
	c.Dialer = &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			// Bounded, so the proxy's queue fills instead of the kernel's.
			err = conn.(*net.TCPConn).SetReadBuffer(256 << 10)
		}
		return conn, err
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := c.Events(ctx)
	expect(t, ch, api.EventSnapshot, 0)

	const total = 1000
	payload := strings.Repeat("z", 16<<10)
	for range total {
		p.emit(api.Event{Type: api.EventRequestFinished, Reason: payload})
	}
	if _, dropped := p.hub.Load().Stats(); dropped == 0 {
		t.Fatal("the receiver was never dropped; the test proves nothing")
	}
	want := uint64(1)
	for want <= total {
		e := next(t, ch)
		switch e.Type {
		case client.EventOffline, api.EventSnapshot:
			continue
		case api.EventRequestFinished:
			if e.ID != want {
				t.Fatalf("got id %d, want %d", e.ID, want)
			}
			want++
		default:
			t.Fatalf("unexpected %q id %d", e.Type, e.ID)
		}
	}
}
