package proxy

import (
	"net/http"
	"strings"

	"github.com/subpool/subpool/proxy/translate"
)

// Wire is the API a provider speaks, as config.toml's wire names it: it
// decides how an attempt is sent and the shape of every error subpool
// writes on the route.
type Wire string

const (
	WireAnthropic Wire = "anthropic"
	WireOpenAI    Wire = "openai"
	WireGemini    Wire = "gemini"
	// wireOpenAIChat is no provider's: the shape of an error event on a
	// Chat Completions stream, which has no event names (eventWire).
	wireOpenAIChat Wire = "openai-chat"
)

// wire is p's Wire. Provider.Wire stays a string, as the daemon reads it
// from config.toml.
func (p *Provider) wire() Wire { return Wire(p.Wire) }

// route is what a client path asks for, read once in ServeHTTP and
// carried by each run after it (a fallback's run carries its target's):
// nothing re-reads the path.
type route struct {
	prov   *Provider
	wire   Wire                 // prov's
	upath  string               // the path the upstream is asked on
	gemini translate.GeminiCall // on the Gemini wire, what upath asks for
}

// pathWire is the wire a provider-relative path belongs to, with the
// Gemini call it makes; "" for a path no wire serves.
func pathWire(rest string) (Wire, translate.GeminiCall) {
	switch rest {
	case "/v1/messages", "/v1/messages/count_tokens":
		return WireAnthropic, translate.GeminiCall{}
	case "/v1/responses", "/v1/chat/completions", "/v1/models", "/v1/embeddings":
		return WireOpenAI, translate.GeminiCall{}
	}
	if c, ok := translate.ParseGeminiPath(rest); ok {
		return WireGemini, c
	}
	return "", translate.GeminiCall{}
}

// route names the provider and the upstream path for a client path.
// Unprefixed paths go to the built-in pool for their API; /NAME/… reaches
// any configured provider. ok false: no route, though rt.prov may name
// the provider the path was meant for (its wire shapes the 404).
func (p *Proxy) route(path string) (rt route, ok bool) {
	name := ""
	rest := path
	if _, _, gemini := translate.GeminiVersion(path); !strings.HasPrefix(path, "/v1/") && !gemini && !strings.HasPrefix(path, translate.CodeAssistPrefix) {
		trim := strings.TrimPrefix(path, "/")
		i := strings.IndexByte(trim, '/')
		if i < 0 {
			return route{}, false
		}
		name, rest = trim[:i], trim[i:]
	}
	w, call := pathWire(rest)
	if name == "" {
		if w == "" {
			return route{}, false
		}
		name = string(w)
		if w == WireGemini {
			name = "google"
		}
	}
	prov := p.o.Providers[name]
	if prov == nil {
		return route{}, false
	}
	rt = route{prov: prov, wire: prov.wire()}
	// /v1/models exists on both APIs; everything else must match the wire.
	if w == "" || (w != rt.wire && rest != "/v1/models") {
		return rt, false
	}
	rt.upath, rt.gemini = rest, call
	return rt, true
}

// allowedMethod is the one method each route serves: the model listing is
// read with GET, everything else is a POST of a request body. Anything else
// is refused before an upstream sees it (and a credential is injected).
func (rt route) allowedMethod() string {
	if rt.upath == "/v1/models" {
		return http.MethodGet
	}
	if rt.wire == WireGemini {
		return rt.gemini.HTTPMethod()
	}
	return http.MethodPost
}

// wireForPath guesses the error shape for a request we refuse before
// routing: the client's SDK must parse our answer.
func (p *Proxy) wireForPath(path string) Wire {
	if rt, _ := p.route(path); rt.prov != nil {
		return rt.wire
	}
	if strings.Contains(path, "/messages") || strings.HasPrefix(path, "/anthropic") {
		return WireAnthropic
	}
	if strings.Contains(path, translate.GeminiBeta) || strings.Contains(path, "/v1alpha/") || strings.Contains(path, translate.CodeAssistPrefix) || strings.HasPrefix(path, "/google") {
		return WireGemini
	}
	return WireOpenAI
}
