package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/translate"
)

// Fallback across providers (docs/fallback.md). When no credential of the
// client's provider can take a request, the ladder (Options.Fallback)
// names other providers and models to try, in order. A target serves only
// if it has a ready credential now; the request then runs the ordinary
// attempt loop (run.loop) on the target's pool, with its model mapped
// and, between the Anthropic and OpenAI APIs, translated both ways by
// proxy/translate. Nothing else changes: rotation, cooldowns, transient
// retries and capacity waits work on the target as on any pool.

// FallbackTarget is one rung of a fallback ladder, resolved for a request:
// the provider that may serve it and the model to ask that provider for.
type FallbackTarget = policy.Rung

// detour serves the request on one target with the ordinary attempt loop,
// through a writer that turns the target's answers into the client's wire.
// A non-nil out is what the client got (or that it left); otherwise why
// says what kept the target from serving, and the client has seen nothing.
func (rn *run) detour(t policy.Target, from translate.Target, reason string, skipped []string) (why string, out *outcome) {
	p := rn.p
	to := p.o.Providers[t.Provider]
	if to == nil || to == rn.prov {
		return "not a provider of this proxy", nil
	}
	d := &detour{
		to: to, model: t.Model, client: from, clientModel: rn.model, stream: rn.info.Stream, clientPath: rn.upath,
		src: rn.jsonBody(rn.body), bodies: map[translate.Target]translated{}, logf: p.noteOnce,
	}
	d.upath = d.pathFor(d.apiWire(), rn.upath)
	body, err := d.prepare(p.o.Pool.Status(to.Name))
	if err != nil {
		// The request holds something the target's wire cannot carry: the
		// request is fine, only this detour is impossible.
		return err.Error(), nil
	}
	if len(skipped) > 0 {
		reason += "; skipped " + strings.Join(skipped, "; ")
	}
	fw := newRewriter(rn.w, &translator{d: d, clientWire: rn.wire})
	fw.onCommit = func(h http.Header) {
		h.Set("x-subpool-fallback", to.Name+"/"+t.Model)
		rn.emit(api.Event{Type: api.EventFallback, Provider: to.Name, CredentialID: h.Get("x-subpool-credential"),
			From: rn.prov.Name, To: to.Name, Model: rn.model, Reason: reason})
		p.o.Logf("fallback: %s/%s served by %s/%s: %s", rn.prov.Name, rn.model, to.Name, t.Model, reason)
	}
	d.in = rn.r
	tr := rn.request.newRun(fw, d.request(rn.r, d.apiWire()), d.route(), body, t.Model, rn.auth)
	tr.via = d
	res, ex := tr.loop(t.MayWait)
	if ex != nil && !fw.committed {
		// The target ran out while trying (its only key answered 429):
		// the request goes on as if it had been out from the start.
		why := ex.Message
		if last := tr.tried.lastReason; last != "" && !strings.Contains(why, last) {
			why += " (last answer: " + last + ")"
		}
		return why, nil
	}
	if ex != nil {
		res = outcome{status: ex.Status, class: classRefused}
	}
	fw.finish(res.abort)
	res.fallbackTo = to.Name + "/" + t.Model
	return "", &res
}

// notLoggedIn tells the user how to give provider a credential.
func notLoggedIn(provider string) string {
	switch provider {
	case "anthropic", "openai":
		return fmt.Sprintf("not logged in — run `subpool login %s` (or `subpool add-key %s --label NAME` for an API key)", provider, provider)
	}
	return fmt.Sprintf("no credentials — add one with `subpool add-key %s --label NAME`", provider)
}

// clientWire is the wire a client route speaks; "" for paths never
// detoured (count_tokens, models and embeddings have no counterpart).
func clientWire(rt route) translate.Target {
	switch rt.upath {
	case "/v1/messages":
		return translate.Anthropic
	case "/v1/chat/completions":
		return translate.OpenAIChat
	case "/v1/responses":
		return translate.OpenAIResponses
	}
	if c := rt.gemini; rt.wire == WireGemini && (c.Method == translate.GeminiGenerate || c.Method == translate.GeminiStream) {
		if c.CodeAssist {
			return translate.GeminiCodeAssist
		}
		return translate.Gemini
	}
	return ""
}

// sameWire reports whether a and b share an answer shape: the Codex
// backend answers in Responses events.
func sameWire(a, b translate.Target) bool {
	norm := func(t translate.Target) translate.Target {
		if t == translate.ChatGPTCodex {
			return translate.OpenAIResponses
		}
		return t
	}
	return norm(a) == norm(b)
}

// detour is one request carried to a fallback target.
type detour struct {
	to          *Provider
	model       string           // asked of the target
	client      translate.Target // what the client speaks
	clientModel string           // what the client asked for; translated answers name it
	stream      bool             // the client asked for a stream
	upath       string           // the target's path for its API keys
	clientPath  string           // the client's own path
	src         []byte           // the client's body
	bodies      map[translate.Target]translated
	logf        func(string, ...any)
	own         bool          // the request's own provider, whose credentials need another wire (reshape.go)
	in          *http.Request // the client's request

	// up is the wire of the attempt under way, only touched from its
	// run's goroutine: outbound sets it just before each send, the
	// writer reads it when the answer arrives.
	up translate.Target
}

type translated struct {
	body []byte
	err  error
}

// apiWire is the wire the target's API keys are asked in. An OpenAI
// client on an OpenAI API goes as it came, unless the upstream serves
// only Chat Completions (ChatOnly). Otherwise the built-in openai provider
// gets the Responses API: api.openai.com serves it for every model, and
// the ChatGPT backend serves nothing else. OpenAI-compatible providers get
// Chat Completions, the one API they all serve.
func (d *detour) apiWire() translate.Target {
	openAIClient := d.client == translate.OpenAIChat || d.client == translate.OpenAIResponses
	switch {
	case d.to.wire() == WireAnthropic:
		return translate.Anthropic
	case d.to.wire() == WireGemini:
		return translate.Gemini // a login's envelope is send's (gemini.go)
	case d.to.ChatOnly:
		return translate.OpenAIChat
	case openAIClient:
		return d.client
	case d.to.Name == "openai":
		return translate.OpenAIResponses
	}
	return translate.OpenAIChat
}

// upWire is the wire of an attempt with auth. A ChatGPT login sends its
// requests to the Codex backend (Auth.BaseURL, StripV1), which takes a
// stricter Responses request than the API.
func (d *detour) upWire(au auth.Auth) translate.Target {
	if d.to.wire() == WireOpenAI && (au.BaseURL != "" || au.StripV1) {
		return translate.ChatGPTCodex
	}
	return d.apiWire()
}

// pathFor is where the target is asked in wire w; clientPath when the
// client's own wire goes through.
func (d *detour) pathFor(w translate.Target, clientPath string) string {
	switch {
	case w == translate.Gemini:
		// The Gemini API's form, the model in the path; send puts it in
		// Code Assist's for a login.
		c := d.geminiCall()
		return translate.GeminiBeta + "models/" + c.Model + ":" + c.Method
	case sameWire(d.client, w):
		return clientPath
	case w == translate.Anthropic:
		return "/v1/messages"
	case w == translate.OpenAIChat:
		return "/v1/chat/completions"
	}
	return "/v1/responses" // the Codex backend's /responses, once StripV1 takes off /v1
}

// route is the target's route, as ServeHTTP would have read it from the
// path it is asked on.
func (d *detour) route() route {
	rt := route{prov: d.to, wire: d.to.wire(), upath: d.upath}
	if rt.wire == WireGemini {
		rt.gemini = d.geminiCall()
	}
	return rt
}

// geminiCall is what the target is asked on the Gemini wire.
func (d *detour) geminiCall() translate.GeminiCall {
	c := translate.GeminiCall{Method: translate.GeminiGenerate, Model: d.model, Version: "v1beta"}
	if d.stream {
		c.Method = translate.GeminiStream
	}
	return c
}

// body is the request for wire w, translated once.
func (d *detour) body(w translate.Target) ([]byte, error) {
	if t, ok := d.bodies[w]; ok {
		return t.body, t.err
	}
	var t translated
	switch {
	case d.client == translate.Gemini && w == translate.Gemini:
		t.body = d.src // the model is in the path
	case sameWire(d.client, w) && (w != translate.ChatGPTCodex || translate.CodexReady(d.src)):
		t.body, t.err = withModel(d.src, d.model)
	default:
		var notes []string
		t.body, notes, t.err = translate.RequestWithOptions(d.client, w, d.src, d.model, translate.RequestOptions{Stream: d.stream})
		if len(notes) > 0 {
			how := "fallback to"
			if d.own {
				how = "to " + string(w) + " on"
			}
			d.logf("%s %s/%s: %s", how, d.to.Name, d.model, strings.Join(notes, "; "))
		}
	}
	d.bodies[w] = t
	return t.body, t.err
}

// prepare translates the request for the wires the target's ready
// credentials will need, judged by their kind (each attempt then decides
// by its Auth), and returns one to start with. It fails only when none of
// them can carry the request.
func (d *detour) prepare(creds []api.CredentialStatus) ([]byte, error) {
	var wires []translate.Target
	for _, c := range creds {
		if c.State != api.StateReady {
			continue
		}
		w := d.upWire(auth.Auth{StripV1: c.Kind == api.KindOAuth})
		if !slices.Contains(wires, w) {
			wires = append(wires, w)
		}
	}
	if len(wires) == 0 {
		wires = append(wires, d.upWire(auth.Auth{}))
	}
	var first error
	for _, w := range wires {
		b, err := d.body(w)
		if err == nil {
			return b, nil
		}
		if first == nil {
			first = err
		}
	}
	var ue *translate.UnsupportedError
	if errors.As(first, &ue) {
		return nil, fmt.Errorf("cannot carry this request: %s: %s", ue.Field, ue.Reason)
	}
	return nil, fmt.Errorf("cannot carry this request: %v", first)
}

// request is the client's request r as the target should see it in wire
// w. On the same wire it goes as it came. Across wires the client's
// headers belong to the other API (anthropic-beta, Claude Code's
// ?beta=true, an SDK's Accept: application/json before a stream), so only
// neutral ones are kept.
func (d *detour) request(r *http.Request, w translate.Target) *http.Request {
	if sameWire(d.client, w) {
		return r
	}
	out := r.Clone(r.Context())
	out.URL.RawQuery = ""
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if ua := r.Header.Get("User-Agent"); ua != "" {
		h.Set("User-Agent", ua)
	}
	if d.stream {
		h.Set("Accept", "text/event-stream")
	}
	if d.to.wire() == WireAnthropic {
		h.Set("anthropic-version", "2023-06-01")
	}
	out.Header = h
	return out
}

// withModel returns body with its top-level "model" replaced and every
// other byte as the client sent it: a same-wire fallback forwards the
// request as is.
func withModel(body []byte, model string) ([]byte, error) {
	m, _ := json.Marshal(model)
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the request body is not a JSON object")
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if k == "model" {
			end := int(dec.InputOffset())
			return slices.Concat(body[:end-len(v)], m, body[end:]), nil
		}
	}
	// No model to replace: translate's rewrite adds one.
	return translate.Request(translate.Anthropic, translate.Anthropic, body, model)
}
