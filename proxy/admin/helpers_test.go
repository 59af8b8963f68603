package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/admintest"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
)

const token = "0123456789abcdef0123456789abcdef"

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// hangGuard bounds every blocking read in these tests. It is never what a
// test asserts: reaching it means the code under test hung.
const hangGuard = 20 * time.Second

type env struct {
	srv     *httptest.Server
	h       *admin.Handler
	hub     *events.Hub
	clk     *clock.Fake
	backend *admintest.Backend
}

// newEnv serves the admin API on a real loopback listener, mounted on a
// mux the way the proxy mounts it.
func newEnv(t *testing.T, ringSize int, tweak func(*admin.Options)) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	e := &env{clk: clk, hub: events.NewHub(clk, ringSize), backend: &admintest.Backend{}}
	e.backend.SetStatus(api.Status{
		Version: "test",
		Listen:  "127.0.0.1:8787",
		Providers: []api.ProviderStatus{{
			Name: "anthropic", Wire: "anthropic", LimitScope: "credential",
			Credentials: []api.CredentialStatus{{ID: "a1", Provider: "anthropic", Label: "work", Kind: api.KindAPIKey, State: api.StateReady}},
		}},
	})
	o := admin.Options{Token: token, Hub: e.hub, Backend: e.backend, Clock: clk, Logf: t.Logf}
	if tweak != nil {
		tweak(&o)
	}
	e.h = admin.New(o)
	mux := http.NewServeMux()
	mux.Handle(admin.Prefix, e.h)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.h.Close()
		e.srv.Close()
	})
	return e
}

func (e *env) wsURL(query string) string {
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + admin.Prefix + "events"
	if query != "" {
		u += "?" + query
	}
	return u
}

// dial opens the event websocket with the Bearer token.
func (e *env) dial(t *testing.T, query string) (*websocket.Conn, *http.Response) {
	t.Helper()
	c, res, err := websocket.DefaultDialer.Dial(e.wsURL(query), http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("dial events: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, res
}

// request makes one REST call with the token unless the headers say
// otherwise; a "Host" entry sets the Host header.
func (e *env) request(t *testing.T, method, path, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+admin.Prefix+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func readEvent(t *testing.T, c *websocket.Conn) api.Event {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangGuard))
	var ev api.Event
	if err := c.ReadJSON(&ev); err != nil {
		t.Fatalf("reading event: %v", err)
	}
	return ev
}

// stamped is e as the hub sends it: with its id and the clock's time.
func stamped(e api.Event, id uint64, at time.Time) api.Event {
	e.ID, e.Time = id, at.UTC()
	return e
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitFor polls cond until it holds; the bound only catches a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
