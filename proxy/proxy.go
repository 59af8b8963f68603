// Package proxy is the engine: one request in, attempts out, one response
// back. It checks who is asking, picks a credential from the pool, sends
// the request, lets the classifier say why an upstream refused, and acts on
// the verdict: rotate, retry in place, wait, refresh or park. See
// docs/architecture.md for the way a request travels.
package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/guard"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// Provider is one pool's upstream as the proxy needs it.
type Provider struct {
	Name    string
	Wire    string // a Wire: "anthropic", "openai" or "gemini"
	BaseURL string
	Profile *classify.Profile
	// ChatOnly: an OpenAI-wire upstream that serves only Chat Completions
	// (wire = "openai-chat"); Responses clients are translated to it.
	ChatOnly bool
}

// Options configures a Proxy. Zero values take the defaults noted.
type Options struct {
	Clock     clock.Clock // default clock.Real{}
	Pool      *pool.Pool
	Auth      auth.Authenticator
	Events    api.Emitter // default api.Discard
	Providers map[string]*Provider

	// ClientKey returns the key clients must present; "" disables the
	// check (only when require_client_key = false).
	ClientKey func() string
	// Clients, when set, replaces ClientKey: it names the client a
	// presented key belongs to (ok false: unknown or revoked, 401) and
	// what that key may use (clients.go). It is asked on every request,
	// so a revoked key is refused at its next one; it must be quick and
	// safe for concurrent use.
	Clients func(key string) (c Client, ok bool)
	// Aliases returns the model aliases ([models] in config.toml), by
	// name, each with its targets in order (alias.go). The map is read,
	// never changed; a reload hands out a new one. Nil: no aliases.
	Aliases      func() map[string][]FallbackTarget
	AllowRemote  bool
	AllowOrigins []string

	MaxBody int64 // default policy.DefaultMaxBody
	// BodyTimeout bounds the reading of one request body, so a client that
	// stalls mid-upload does not hold a connection for ever; default
	// DefaultBodyTimeout, long enough for a long conversation on a slow link.
	BodyTimeout      time.Duration
	TransientBackoff []time.Duration // default policy.Defaults()
	MaxAttempts      int             // default policy.Defaults(); waits are not attempts
	SoleProviderMax  time.Duration   // longest cooldown waited out in-request
	CapacityMax      time.Duration   // per-request budget for 529s; 0 = off
	// FirstEventTimeout and IdleTimeout are the stream deadlines
	// (deadline.go); default policy.Defaults(), negative = none.
	FirstEventTimeout time.Duration
	IdleTimeout       time.Duration

	// Fallback lists, in order, the providers (and models) that may serve
	// a request for provider and model when no credential of provider can
	// take it; it is asked before any sole-provider wait (fallback.go,
	// docs/fallback.md). Nil: never. It must be safe for concurrent use.
	Fallback func(provider, model string) []FallbackTarget

	// Transport sends upstream requests. Default: a tuned clone of
	// http.DefaultTransport. Tests inject refusing or slow ones.
	Transport http.RoundTripper
	// Jitter returns a value in [0,1) for capacity back-off; tests pin it.
	Jitter func() float64
	Logf   func(format string, args ...any)
}

// Proxy is the http.Handler for the model routes.
type Proxy struct {
	o Options
	// limits is what Tune last set: the policy and max_body. Each request
	// reads it once, at its start, and keeps it to the end.
	limits   atomic.Pointer[limits]
	refused  guard.Refusals
	secrets  secrets // the credentials' auth sent so far, kept out of relayed bodies
	inFlight atomic.Int64
	byClient clientCounts
	models   modelLists
	said     recent // translation notes logged (saidonce.go)
}

// New returns a Proxy; it starts nothing.
func New(o Options) *Proxy {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Events == nil {
		o.Events = api.Discard
	}
	if o.Transport == nil {
		o.Transport = NewTransport(10 * time.Minute)
	}
	if o.Jitter == nil {
		o.Jitter = jitter
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	p := &Proxy{o: o}
	p.secrets.max, p.said.max = secretsMax, saidMax
	p.Tune(policy.Config{
		TransientBackoff: o.TransientBackoff,
		CapacityMax:      o.CapacityMax,
		MaxAttempts:      o.MaxAttempts,
		SoleProviderMax:  o.SoleProviderMax,

		FirstEventTimeout: o.FirstEventTimeout,
		IdleTimeout:       o.IdleTimeout,
	}, o.MaxBody)
	return p
}

// DefaultBodyTimeout is Options.BodyTimeout's default.
const DefaultBodyTimeout = 5 * time.Minute

// limits are the settings a reload of config.toml may change while the
// proxy runs.
type limits struct {
	pol     policy.Config
	maxBody int64
}

// Tune replaces the policy ([wait], [retry]) and max_body for requests
// that start from now on; requests in flight finish under the ones they
// started with. Zero fields take the defaults, as in New.
func (p *Proxy) Tune(pol policy.Config, maxBody int64) {
	def := policy.Defaults()
	if pol.TransientBackoff == nil {
		pol.TransientBackoff = def.TransientBackoff
	}
	if pol.MaxAttempts <= 0 {
		pol.MaxAttempts = def.MaxAttempts
	}
	if pol.MaxPoolWaits <= 0 {
		pol.MaxPoolWaits = def.MaxPoolWaits
	}
	if pol.FirstEventTimeout == 0 {
		pol.FirstEventTimeout = def.FirstEventTimeout
	}
	if pol.IdleTimeout == 0 {
		pol.IdleTimeout = def.IdleTimeout
	}
	if maxBody <= 0 {
		maxBody = policy.DefaultMaxBody
	}
	p.limits.Store(&limits{pol: pol, maxBody: maxBody})
}

// NewTransport is the upstream transport: HTTP/2 where offered, enough idle
// connections per host for a busy pool, and a header timeout instead of a
// client timeout (which would cut long streams).
func NewTransport(headerTimeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.ResponseHeaderTimeout = headerTimeout
	t.MaxResponseHeaderBytes = maxResponseHeader // headerbound.go
	t.ForceAttemptHTTP2 = true
	return t
}

// Refusals counts requests refused by the guard.
func (p *Proxy) Refusals() *guard.Refusals { return &p.refused }

// InFlight is the number of requests being served now.
func (p *Proxy) InFlight() int64 { return p.inFlight.Load() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	guard.SecurityHeaders(w.Header())
	// Guards come first and in this order: a request from a web page or a
	// rebound DNS name must not even learn whether the key is right.
	if !guard.HostAllowed(r.Host, p.o.AllowRemote) {
		p.refused.Host.Add(1)
		writeError(w, p.wireForPath(r.URL.Path), http.StatusForbidden, "subpool only answers requests addressed to 127.0.0.1 or localhost (Host "+quoteShort(r.Host)+" refused)", 0, noRetry)
		return
	}
	if guard.Browser(r, p.o.AllowOrigins) {
		p.refused.Origin.Add(1)
		writeError(w, p.wireForPath(r.URL.Path), http.StatusForbidden, "requests from web pages are refused; add the origin to allow_origins in config.toml if you trust it", 0, noRetry)
		return
	}
	r, ok := p.authenticate(w, r)
	if !ok {
		return
	}
	r = withoutClientKey(r)
	rt, routed := p.route(r.URL.Path)
	if !routed {
		wire := p.wireForPath(r.URL.Path)
		if rt.prov != nil {
			wire = rt.wire
		}
		writeError(w, wire, http.StatusNotFound, "subpool does not serve "+r.Method+" "+quoteShort(r.URL.Path)+"; see the routes in `subpool --help`", 0, noRetry)
		return
	}
	if allow := rt.allowedMethod(); r.Method != allow {
		w.Header().Set("Allow", allow)
		writeError(w, rt.wire, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not served; this route takes %s", r.Method, rt.upath, allow), 0, noRetry)
		return
	}
	// The model list is subpool's own answer, filtered by the key's
	// limits rather than refused (models.go).
	if rt.upath != "/v1/models" && !p.mayUseProvider(w, r, rt) {
		return
	}
	name := clientName(r)
	p.inFlight.Add(1)
	p.byClient.add(name, 1)
	defer func() {
		p.inFlight.Add(-1)
		p.byClient.add(name, -1)
	}()
	if rt.upath == "/v1/models" {
		p.serveModels(w, r, rt.prov)
		return
	}
	p.serve(w, r, rt)
}

func (p *Proxy) clientKey() string {
	if p.o.ClientKey == nil {
		return ""
	}
	return p.o.ClientKey()
}

// presentedKey is the client key from x-api-key or Authorization: Bearer,
// the two ways Claude Code, Codex and the SDKs send a key, or from
// x-goog-api-key, Gemini CLI's and Google's SDK's (the ?key= of the
// Gemini API is read by queryKey).
//
// The keys are looked up as net/http delivers them, canonical: Get would
// canonicalize a lower-case name again, an allocation on every request.
func presentedKey(h http.Header) string {
	if k := firstValue(h, "X-Api-Key"); k != "" {
		return k
	}
	if k := firstValue(h, "X-Goog-Api-Key"); k != "" {
		return k
	}
	a := firstValue(h, "Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// firstValue is h.Get(key) for a key already canonical.
func firstValue(h http.Header, key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return "\"" + strings.ToValidUTF8(s, "?") + "\""
}
