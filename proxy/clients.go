package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/guard"
	"github.com/subpool/subpool/proxy/metering"
	"github.com/subpool/subpool/proxy/policy"
)

// Client is the holder of one client key: a tool, by name, and what the
// key may reach. Empty limits allow everything.
type Client struct {
	Name string
	// Providers the key may use; empty: all.
	Providers []string
	// Models are globs ('*' any run of characters) of the model names the
	// key may ask for; empty: all. An alias is allowed when its own name
	// or one of its targets matches (policy.Glob).
	Models []string
}

// AllowsProvider reports whether the key may use provider.
func (c Client) AllowsProvider(provider string) bool {
	return len(c.Providers) == 0 || slices.Contains(c.Providers, provider)
}

// AllowsModel reports whether the key may ask for model. A request that
// names no model (count_tokens of some clients) is allowed: nothing is
// spent on a model it could not name.
func (c Client) AllowsModel(model string) bool {
	if len(c.Models) == 0 || model == "" {
		return true
	}
	for _, g := range c.Models {
		if policy.Glob(g, model) {
			return true
		}
	}
	return false
}

type clientCtxLimits struct{}

// withClientLimits marks r with the client whose key it presented: its
// name and its limits, in one context value.
func withClientLimits(r *http.Request, c Client) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientCtxLimits{}, c))
}

// clientOf is the client r was marked with; the zero Client (no limits)
// when none.
func clientOf(r *http.Request) Client {
	c, _ := r.Context().Value(clientCtxLimits{}).(Client)
	return c
}

// authenticate finds who is asking. With Options.Clients each key names a
// client; otherwise the single Options.ClientKey (or none) is checked. It
// answers 401 itself and reports false when the key is missing or unknown.
func (p *Proxy) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	key := presentedKey(r.Header)
	if key == "" && strings.Contains(r.URL.RawQuery, "key=") && p.wireForPath(r.URL.Path) == WireGemini {
		// The Gemini API's other way of sending a key; the query is
		// never forwarded with it (geminiQuery).
		key = r.URL.Query().Get("key")
	}
	if p.o.Clients != nil {
		c, ok := p.o.Clients(key)
		if !ok {
			p.refuseKey(w, r, key)
			return r, false
		}
		if c.Name == "" && len(c.Providers) == 0 && len(c.Models) == 0 {
			return r, true // nothing to mark the request with
		}
		return withClientLimits(r, c), true
	}
	if want := p.clientKey(); want != "" && !guard.TokenEqual(key, want) {
		p.refuseKey(w, r, key)
		return r, false
	}
	return r, true
}

func (p *Proxy) refuseKey(w http.ResponseWriter, r *http.Request, key string) {
	p.refused.Auth.Add(1)
	msg := "missing client key: set the key from `subpool env shell` as x-api-key, x-goog-api-key or Authorization: Bearer"
	if key != "" {
		msg = "wrong client key (unknown or revoked): use the key from `subpool env TOOL`; `subpool client list` shows the keys that exist"
	}
	writeError(w, p.wireForPath(r.URL.Path), http.StatusUnauthorized, msg, 0, noRetry)
}

// mayUseProvider answers 403 in the provider's shape, with the reason,
// when the client's key is limited to other providers. No upstream is
// asked.
func (p *Proxy) mayUseProvider(w http.ResponseWriter, r *http.Request, rt route) bool {
	c, prov := clientOf(r), rt.prov
	if c.AllowsProvider(prov.Name) {
		return true
	}
	writeError(w, rt.wire, http.StatusForbidden, fmt.Sprintf("the client key %q may not use provider %s (it is limited to %s); see `subpool client list`",
		c.Name, prov.Name, strings.Join(c.Providers, ", ")), 0, noRetry)
	// Unlike a guard's refusal, this one is a tool's request the user
	// will want to see in the recent list, with who sent it.
	p.o.Events.Emit(api.Event{Type: api.EventRequestFinished, Provider: prov.Name, Path: rt.upath, Status: http.StatusForbidden,
		Class: string(classRefused), Client: c.Name, ClientApp: metering.ClientApp(r.UserAgent())})
	return false
}

// refuseModel answers 403 for a model the client's key may not ask for.
func refuseModel(w http.ResponseWriter, wire Wire, c Client, model string) {
	writeError(w, wire, http.StatusForbidden, fmt.Sprintf("the client key %q may not use model %q (it is limited to %s); see `subpool client list`",
		c.Name, model, strings.Join(c.Models, ", ")), 0, noRetry)
}

// clientCounts counts the requests in flight per client name, for status.
type clientCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (cc *clientCounts) add(name string, d int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n == nil {
		cc.n = map[string]int{}
	}
	cc.n[name] += d
	if cc.n[name] <= 0 {
		delete(cc.n, name)
	}
}

// InFlightByClient is the number of requests being served now per client
// name ("" for requests no key named), for status.
func (p *Proxy) InFlightByClient() map[string]int {
	p.byClient.mu.Lock()
	defer p.byClient.mu.Unlock()
	out := make(map[string]int, len(p.byClient.n))
	for k, v := range p.byClient.n {
		out[k] = v
	}
	return out
}

// clientName is the name of the client key a request was made with, for
// attribution in events, status and history; "" when none.
func clientName(r *http.Request) string {
	return clientOf(r).Name
}
