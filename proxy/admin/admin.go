// Package admin serves the admin API under /subpool/v1/ on the proxy's
// listener: status, credential management, login, and the event websocket.
// Its clients are the tray, the CLI verbs (through package client) and the
// user's scripts; never a web page.
//
// Every request passes one outer guard before it reaches a route (see New):
// the same Host and browser checks as the proxy listener, then the admin
// token. Routes are one table (routes, below), in the manner of Tailscale's
// LocalAPI handler map.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
	"github.com/subpool/subpool/proxy/guard"
)

// Prefix is where the handler expects to be mounted.
const Prefix = "/subpool/v1/"

// Subprotocol is the websocket subprotocol a client names, followed by the
// admin token, when it cannot send an Authorization header (browsers'
// WebSocket API cannot; websocat and others can do either).
const Subprotocol = "subpool"

// Response headers on the websocket handshake; see serveEvents.
const (
	HeaderBoot   = "X-Subpool-Boot"
	HeaderResume = "X-Subpool-Resume" // "replay" or "snapshot"
	HeaderStart  = "X-Subpool-Start"  // last event id at connection: where a replay ends
)

// routes is the whole API surface. A pattern is the path under Prefix;
// {id} matches one path segment and is read with r.PathValue("id").
var routes = []route{
	{"GET", "status", (*Handler).serveStatus},                        // → api.Status
	{"POST", "credentials", (*Handler).serveAddCredential},           // body api.AddCredential → api.Added
	{"DELETE", "credentials/{id}", (*Handler).serveRemoveCredential}, // → 204
	{"POST", "credentials/{id}/pause", (*Handler).servePause},        // → 204
	{"POST", "credentials/{id}/resume", (*Handler).serveResume},      // → 204; 409 when it needs a login
	{"POST", "credentials/{id}/reset", (*Handler).serveReset},        // → 204; clears cooldowns
	{"POST", "credentials/{id}/reserve", (*Handler).serveReserve},    // body {percent} → 204 (reserve.go)
	{"POST", "credentials/{id}/tools", (*Handler).serveTools},        // body {other_tools} → 204 (tools.go)
	{"POST", "login", (*Handler).serveLogin},                         // body {provider, label} → api.LoginStart
	{"POST", "login/complete", (*Handler).serveCompleteLogin},        // body {provider, pasted} → 204 (login_complete.go)
	{"GET", "events", (*Handler).serveEvents},                        // websocket; ?since=ID&boot=B
	{"GET", "usage", (*Handler).serveUsage},                          // ?since=24h|7d|2026-11-01&by=day|hour|credential|model|client|app|provider → api.UsageReport
	{"GET", "history", (*Handler).serveHistory},                      // ?limit=50&before=ID&class=C → api.HistoryPage
	{"GET", "clients", (*Handler).serveClients},                      // → []api.ClientStatus (names, limits, in flight; never a key)
	{"POST", "clients", (*Handler).serveAddClient},                   // body api.AddClient → api.ClientAdded (the key, this once)
	{"DELETE", "clients/{name}", (*Handler).serveRevokeClient},       // → 204; the key is refused from its next request
	{"POST", "reload", (*Handler).serveReload},                       // → api.ReloadResult; 422 when the edit is refused
}

type route struct {
	method  string
	pattern string
	serve   func(*Handler, http.ResponseWriter, *http.Request)
}

// Backend is every operation on a home's credentials and client keys: what
// the admin API drives, one method per route. The daemon implements it
// (serving, or opened in place by a CLI verb when no proxy answers), and
// so does the admin client (proxy/admin/client) for a running proxy; the
// CLI and the tray hold one or the other behind this interface.
//
// Errors wrapping api.ErrBadRequest answer 400, api.ErrNotFound 404,
// api.ErrConflict 409, api.ErrUnsupported 501, anything else 500; the error's text is the
// response's message, so it must be one line a person can act on and must
// never contain a secret.
type Backend interface {
	Status(ctx context.Context) (api.Status, error)
	AddCredential(ctx context.Context, req api.AddCredential) (id string, err error)
	RemoveCredential(ctx context.Context, id string) error
	Pause(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
	Reset(ctx context.Context, id string) error
	// Reserve sets a subscription's reserve in percent (0..99); a
	// negative percent returns it to [usage] reserve.
	Reserve(ctx context.Context, id string, percent int) error
	// SetOtherTools opens a subscription login to every tool (on) or
	// keeps it for the tool it belongs to (off): a Claude login serves
	// Claude Code, a Google login Gemini CLI (api.SubscriptionTool). A
	// credential that serves every tool anyway (an API key, a ChatGPT
	// login) is a bad request.
	SetOtherTools(ctx context.Context, id string, on bool) error
	StartLogin(ctx context.Context, provider, label string) (api.LoginStart, error)

	// Client keys: one per tool, listed by name, revoked by name.
	Clients(ctx context.Context) ([]api.ClientStatus, error)
	// AddClient makes a key and returns it: the only answer that ever
	// carries one.
	AddClient(ctx context.Context, req api.AddClient) (api.ClientAdded, error)
	RevokeClient(ctx context.Context, name string) error

	// Reload reads config.toml again and applies what can change live;
	// a refused edit is the result's Error, not an error.
	Reload(ctx context.Context) (api.ReloadResult, error)
}

// Options configure New. Hub and Backend are required.
type Options struct {
	// Token is the admin token (the home's admin-token file). Empty refuses
	// every request: an unset token must never mean an open API. It is sent
	// as a websocket subprotocol by some clients, so it should be made of
	// HTTP token characters (hex or base64url without padding).
	Token string
	// AllowRemote lets any Host through (config allow_remote). Browser
	// requests are refused regardless, and the token is still required.
	AllowRemote bool
	Hub         *events.Hub
	Backend     Backend
	// History answers usage and history; nil answers 501 (history off).
	History History
	// Clock stamps the snapshot message; nil is the wall clock. Websocket
	// pings and deadlines run on the wall clock whatever this is: the OS
	// enforces socket deadlines in real time.
	Clock clock.Clock
	// Logf receives one line per noteworthy happening (a refusal, a
	// dropped listener, a backend failure); nil discards.
	Logf func(format string, args ...any)
	// Refusals counts refused requests; nil gives the handler its own. Pass
	// the proxy listener's counter to report both as one.
	Refusals *guard.Refusals

	// QueueSize bounds each websocket's pending events (default 256). A
	// listener further behind than this is disconnected and must reconnect
	// with ?since.
	QueueSize int
	// PingPeriod is how often each websocket is pinged (default 30s).
	PingPeriod time.Duration
	// PongWait is how long a websocket may stay silent (no pong) before it
	// is closed (default 60s). It must exceed PingPeriod, or live clients
	// are cut between pings.
	PongWait time.Duration
	// WriteWait bounds each write to a websocket (default 10s).
	WriteWait time.Duration
}

// Handler is the admin API. Mount it at Prefix; see New.
type Handler struct {
	token       string
	allowRemote bool
	hub         *events.Hub
	backend     Backend
	history     History
	clk         clock.Clock
	logf        func(string, ...any)
	refusals    *guard.Refusals
	queue       int
	pingPeriod  time.Duration
	pongWait    time.Duration
	writeWait   time.Duration
	upgrader    websocket.Upgrader

	handler http.Handler // the guard layers around route

	mu      sync.Mutex
	closed  bool
	closing chan struct{} // closed by Close
	streams sync.WaitGroup
}

// New returns the admin API handler. It panics if Hub or Backend is nil,
// which is a wiring mistake, not a run-time condition.
func New(o Options) *Handler {
	if o.Hub == nil || o.Backend == nil {
		panic("admin.New: Hub and Backend are required")
	}
	h := &Handler{
		token:       o.Token,
		allowRemote: o.AllowRemote,
		hub:         o.Hub,
		backend:     o.Backend,
		history:     o.History,
		clk:         o.Clock,
		logf:        o.Logf,
		refusals:    o.Refusals,
		queue:       o.QueueSize,
		pingPeriod:  o.PingPeriod,
		pongWait:    o.PongWait,
		writeWait:   o.WriteWait,
		closing:     make(chan struct{}),
	}
	if h.clk == nil {
		h.clk = clock.Real{}
	}
	if h.logf == nil {
		h.logf = func(string, ...any) {}
	}
	if h.refusals == nil {
		h.refusals = new(guard.Refusals)
	}
	if h.queue <= 0 {
		h.queue = events.DefaultQueue
	}
	if h.pingPeriod <= 0 {
		h.pingPeriod = 30 * time.Second
	}
	if h.pongWait <= 0 {
		h.pongWait = 60 * time.Second
	}
	if h.writeWait <= 0 {
		h.writeWait = 10 * time.Second
	}
	h.upgrader = websocket.Upgrader{
		Subprotocols: []string{Subprotocol},
		// CheckOrigin stays nil (same-origin only) as a second line behind
		// localOnly, which has already refused any request with an Origin.
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			writeError(w, status, "websocket handshake failed: "+reason.Error())
		},
	}

	// The layers, innermost first; a request meets them in reverse.
	var hh http.Handler = http.HandlerFunc(h.route)
	// 3. The token, last among the checks so that a page probing the API
	//    learns nothing, not even whether a token would be accepted.
	hh = h.requireToken(hh)
	// 2. Where the request comes from: a loopback Host (against DNS
	//    rebinding) and no browser (against cross-site requests, which a
	//    page can send without reading the answer).
	hh = h.localOnly(hh)
	// 1. Security headers first of all, so refusals carry them too.
	hh = withSecurityHeaders(hh)
	h.handler = hh
	return h
}

// ServeHTTP runs the guard layers, then the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.handler.ServeHTTP(w, r)
}

// Refusals returns the refusal counters.
func (h *Handler) Refusals() *guard.Refusals { return h.refusals }

// Close disconnects every event websocket with a "going away" close frame
// and waits for their goroutines to end. New websocket requests are then
// refused; REST requests keep working. Call it before shutting the server
// down: http.Server.Shutdown does not track hijacked connections.
func (h *Handler) Close() error {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
	h.mu.Unlock()
	h.streams.Wait()
	return nil
}

func withSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guard.SecurityHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No allow-listed origins here, unlike the proxy listener: the
		// admin API has no business with any web page.
		if msg := guard.Check(r, h.allowRemote, nil, h.refusals); msg != "" {
			h.logf("admin: refused %s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, msg)
			writeError(w, http.StatusForbidden, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !guard.TokenEqual(presentedToken(r), h.token) {
			h.refusals.Auth.Add(1)
			h.logf("admin: refused %s %s from %s: missing or wrong admin token", r.Method, r.URL.Path, r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="subpool"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong admin token: send "+
				"Authorization: Bearer <token>, with the token from the admin-token file in subpool's home")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// presentedToken is the Bearer token, or, on a websocket handshake without
// an Authorization header, the token offered as the protocol after
// Subprotocol ("Sec-WebSocket-Protocol: subpool, <token>").
func presentedToken(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, tok, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		return strings.TrimSpace(tok)
	}
	if websocket.IsWebSocketUpgrade(r) {
		if p := websocket.Subprotocols(r); len(p) >= 2 && p[0] == Subprotocol {
			return p[1]
		}
	}
	return ""
}

// route finds the table entry for the path and method and runs it.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), Prefix)
	if !ok {
		writeError(w, http.StatusNotFound, "no such endpoint: the admin API lives under "+Prefix)
		return
	}
	segs := strings.Split(rest, "/")
	var allowed []string
	for _, rt := range routes {
		vals, ok := match(rt.pattern, segs)
		if !ok {
			continue
		}
		if rt.method != r.Method {
			allowed = append(allowed, rt.method)
			continue
		}
		for k, v := range vals {
			r.SetPathValue(k, v)
		}
		rt.serve(h, w, r)
		return
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed here; use "+strings.Join(allowed, " or "))
		return
	}
	writeError(w, http.StatusNotFound, "no such endpoint; see docs/events.md and the CONTRACT for the admin API")
}

// match reports whether path segments fit pattern, and the {name} values.
func match(pattern string, segs []string) (map[string]string, bool) {
	pat := strings.Split(pattern, "/")
	if len(pat) != len(segs) {
		return nil, false
	}
	var vals map[string]string
	for i, p := range pat {
		if name, ok := strings.CutPrefix(p, "{"); ok {
			v, err := url.PathUnescape(segs[i])
			if err != nil || v == "" {
				return nil, false
			}
			if vals == nil {
				vals = make(map[string]string)
			}
			vals[strings.TrimSuffix(name, "}")] = v
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return vals, true
}

func (h *Handler) serveStatus(w http.ResponseWriter, r *http.Request) {
	st, err := h.backend.Status(r.Context())
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *Handler) serveAddCredential(w http.ResponseWriter, r *http.Request) {
	var req api.AddCredential
	if !decodeBody(w, r, &req, `{"provider":…,"label":…,"kind":"api_key"|"oauth","secret":{…}}`) {
		return
	}
	id, err := h.backend.AddCredential(r.Context(), req)
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Added{ID: id})
}

func (h *Handler) serveRemoveCredential(w http.ResponseWriter, r *http.Request) {
	h.writeDone(w, r, h.backend.RemoveCredential(r.Context(), r.PathValue("id")))
}

func (h *Handler) servePause(w http.ResponseWriter, r *http.Request) {
	h.writeDone(w, r, h.backend.Pause(r.Context(), r.PathValue("id")))
}

func (h *Handler) serveResume(w http.ResponseWriter, r *http.Request) {
	h.writeDone(w, r, h.backend.Resume(r.Context(), r.PathValue("id")))
}

func (h *Handler) serveReset(w http.ResponseWriter, r *http.Request) {
	h.writeDone(w, r, h.backend.Reset(r.Context(), r.PathValue("id")))
}

// LoginRequest is the body of POST /subpool/v1/login.
type LoginRequest struct {
	Provider string `json:"provider"`
	Label    string `json:"label,omitempty"`
}

func (h *Handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	var req LoginRequest
	if !decodeBody(w, r, &req, `{"provider":"anthropic"|"openai","label":…}`) {
		return
	}
	ls, err := h.backend.StartLogin(r.Context(), req.Provider, req.Label)
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ls)
}

// writeDone answers an action with no result: 204, or the error.
func (h *Handler) writeDone(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) writeBackendError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, api.ErrBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, api.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, api.ErrUnsupported):
		code = http.StatusNotImplemented
	case errors.Is(err, api.ErrConflict):
		code = http.StatusConflict
	default:
		h.logf("admin: %s %s: %v", r.Method, r.URL.Path, err)
	}
	writeError(w, code, oneLine(err.Error()))
}

// maxBody bounds request bodies: the largest legitimate one is an OAuth
// credential of a few kilobytes.
const maxBody = 1 << 20

// decodeBody reads one JSON object into v, or answers 400/413 and returns
// false. The message shows the expected shape and never quotes the body
// back, since the body may hold a secret.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(v)
	if err == nil {
		return true
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		writeError(w, http.StatusRequestEntityTooLarge, "request body too large (limit 1 MiB)")
		return false
	}
	writeError(w, http.StatusBadRequest, "the body must be one JSON object: "+shape)
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	// Status carries account state; no cache anywhere should keep it.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, api.Error{Error: msg})
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
