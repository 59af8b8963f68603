// Package classify decides why an upstream refused a request. It is a pure
// function from (provider, status, headers, body, transport error) to a
// Verdict: what kind of failure it is (Class), how far it reaches (Scope),
// when it lifts (RetryAfter) and, in plain words, why (Reason). The proxy
// acts on the verdict; this package only reads.
//
// What each provider's status codes, error codes, messages and headers
// mean lives in one table per provider (tables.go), with a test row for
// every real error sample it was built from (testdata/corpus). The rules
// in prose are in docs/providers.md.
//
// Nothing here touches the network or the clock, and nothing is kept
// between calls: the caller passes now, which turns reset timestamps into
// durations.
//
// A verdict runs only on a refusal, next to the network call that follows
// it, so the code reads plainly (encoding/json, strings) rather than fast:
// a few microseconds a verdict (BenchmarkClassify429).
package classify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Class is what kind of failure a response is; the proxy's policy hangs
// off it (see CONTRACT.md, "Classes").
type Class string

// Classes.
const (
	OK          Class = "ok"
	RateLimit   Class = "rate_limit"
	Transient   Class = "transient"
	Capacity    Class = "capacity"
	AuthExpired Class = "auth_expired"
	AuthInvalid Class = "auth_invalid"
	Payment     Class = "payment"
	ClientError Class = "client_error"
	Aborted     Class = "aborted"
	// RegionBlocked: the provider refuses the location the request came
	// from (the egress address), not the credential or the request. Every
	// credential behind that address meets the same refusal, and only
	// another egress ([network] proxy, a credential's --proxy) cures it.
	RegionBlocked Class = "region_blocked"
)

// Valid reports whether c is one of the classes above.
func (c Class) Valid() bool {
	switch c {
	case OK, RateLimit, Transient, Capacity, AuthExpired, AuthInvalid, Payment, ClientError, Aborted, RegionBlocked:
		return true
	}
	return false
}

// Scope is how far a verdict reaches. It is set only for classes that act
// on credentials: rate_limit (credential, model or provider), payment
// (credential or model), auth_expired and auth_invalid (credential),
// region_blocked (provider: every credential behind the egress).
type Scope string

// Scopes.
const (
	ScopeNone       Scope = ""
	ScopeCredential Scope = "credential"
	ScopeModel      Scope = "model"
	// ScopeProvider is egress-wide: every credential of the provider
	// shares the limit, as when the upstream counts per IP address.
	ScopeProvider Scope = "provider"
)

// Valid reports whether s is one of the scopes above.
func (s Scope) Valid() bool {
	switch s {
	case ScopeNone, ScopeCredential, ScopeModel, ScopeProvider:
		return true
	}
	return false
}

// MaxRetryAfter is the longest reset time believed. Subscription windows
// are at most a week and spend caps a month; a longer hint is a bug or a
// unit mix-up (milliseconds read as seconds), and trusting it would park a
// healthy credential for years.
const MaxRetryAfter = 90 * 24 * time.Hour

// Verdict is the classifier's answer.
type Verdict struct {
	Class Class
	Scope Scope
	// RetryAfter is when the refusal lifts, from the upstream's own
	// signals; 0 when it gave none. Only rate_limit, capacity, transient
	// and payment verdicts carry one.
	RetryAfter time.Duration
	// Reason is a short line for a person, e.g. "429 rate_limit_error:
	// account rate limit — This request would exceed…". It may quote the
	// upstream's message (truncated, anything that looks like a key
	// redacted) and never includes request headers.
	Reason string
	// Status is the HTTP status the refusal was judged as: the response's
	// for Classify (0 when none arrived), and for ClassifyEvent the status
	// the in-stream error stands for on that API (400 for
	// invalid_request_error, 529 for overloaded_error, 500 when unknown).
	// A proxy that relays an in-stream refusal as an HTTP error answers
	// with it. Not part of the JSON shape.
	Status int
	// Tool marks a refusal that is about the tool that sent the request,
	// not about the credential. A Claude subscription's OAuth token is
	// meant for Claude Code: Anthropic refuses another tool's request
	// (400 "This credential is only authorized for use with Claude Code
	// …") or bills it as extra usage and refuses it when there is none
	// (400 "Third-party apps now draw from your extra usage …", "You're
	// out of extra usage …"). The same credential goes on serving Claude
	// Code, so such a verdict is client_error with no scope: nothing may
	// cool or park the credential for it. The proxy should stop sending
	// that tool to that credential for a while, and try another
	// credential (an API key) before it relays the refusal. Tool is only
	// ever set on client_error. In the JSON shape it is "tool": true, and
	// absent when false, so the contract's four keys read as before.
	Tool bool
}

type verdictJSON struct {
	Class        Class  `json:"class"`
	Scope        Scope  `json:"scope"`
	RetryAfterMS int64  `json:"retry_after_ms"`
	Reason       string `json:"reason"`
	Tool         bool   `json:"tool,omitempty"`
}

// MarshalJSON writes the contract's shape: class, scope, retry_after_ms
// (0 when unknown) and reason, and "tool": true on a refusal about the
// requesting tool (Tool).
func (v Verdict) MarshalJSON() ([]byte, error) {
	return json.Marshal(verdictJSON{v.Class, v.Scope, v.RetryAfter.Milliseconds(), v.Reason, v.Tool})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Verdict) UnmarshalJSON(b []byte) error {
	var j verdictJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*v = Verdict{Class: j.Class, Scope: j.Scope, RetryAfter: time.Duration(j.RetryAfterMS) * time.Millisecond, Reason: j.Reason, Tool: j.Tool}
	return nil
}

// Response is one upstream attempt as the proxy saw it.
type Response struct {
	Status int // 0 when no response arrived
	Header http.Header
	Body   []byte // the error body, or its first part; may be nil
	Err    error  // the transport error, if any
}

// MaxBody is how much of an error body Classify reads. Error bodies are a
// few hundred bytes; a megabyte of HTML from a misbehaving proxy is not
// read. The proxy reads this much to classify and relays the whole body.
const MaxBody = 64 << 10

// Classify decides what r means for provider p (nil: a profile that knows
// both wire formats). A 2xx status without an error is OK. Only the first
// MaxBody bytes of the body are read. It never fails: a body it cannot
// read as JSON (HTML, plain text, JSON cut short) is judged by its status
// and the tables' phrases.
func Classify(p *Profile, r Response, now time.Time) Verdict {
	if r.Err != nil {
		// A client that leaves cancels the context of the upstream call;
		// that must never read as the upstream's fault.
		if errors.Is(r.Err, context.Canceled) {
			return Verdict{Class: Aborted, Reason: "the client went away"}
		}
		// An error after an error status (a cut body) is still that
		// status; otherwise nothing usable arrived.
		if r.Status < 400 {
			return transportVerdict(r.Err)
		}
	}
	if r.Status >= 200 && r.Status < 300 {
		return Verdict{Class: OK, Reason: "ok", Status: r.Status}
	}
	if r.Status == 0 {
		return Verdict{Class: Transient, Reason: "no response from the upstream"}
	}
	if p == nil {
		p = &anyProfile
	}
	body := r.Body
	if len(body) > MaxBody {
		body = body[:MaxBody]
	}
	return p.decide(r.Status, r.Header, parseBody(body), now, false)
}

// ClassifyEvent reads one event of a 200 SSE stream: its name (may be
// "") and data, whole, whatever its size (a Responses "response.failed"
// echoes the whole response object, its error at response.error).
// isError is false for ordinary content: named events other than "error"
// and "response.failed" are waved through unread, and an unnamed data line
// is an error only when it is one: Anthropic's {"type":"error",…}, a Chat
// Completions {"error":{…}}, a relayed Codex {"codex_error_info":…}.
// Errors inside a stream classify like the HTTP refusal they stand for,
// and the verdict's Status is that refusal's status.
func ClassifyEvent(p *Profile, event string, data []byte, now time.Time) (v Verdict, isError bool) {
	switch event {
	case "error", "response.failed":
	case "":
		if !isStreamError(data) {
			return Verdict{Class: OK, Reason: "ok"}, false
		}
	default:
		return Verdict{Class: OK, Reason: "ok"}, false
	}
	if p == nil {
		p = &anyProfile
	}
	f := parseBody(data)
	return p.decide(streamStatus(f), nil, f, now, true), true
}

// streamStatus is the HTTP status an in-stream error stands for, so the
// same table judges both, from its most specific identifier that has one.
// Unknown codes count as a server error: the upstream accepted the request
// and then failed.
func streamStatus(f *fields) int {
	for _, id := range f.ids {
		if s, ok := streamCodeStatus[id.s]; ok {
			return s
		}
	}
	// Google's error.code is the HTTP status itself.
	if f.g != nil {
		for _, id := range f.ids {
			if n, err := strconv.Atoi(id.s); err == nil && len(id.s) == 3 && n >= 400 && n <= 599 {
				return n
			}
		}
	}
	return http.StatusInternalServerError
}

// streamCodeStatus: each error type's status on its own API, from
// docs.claude.com/en/api/errors (400 … 529) and OpenAI's error-code guide
// (429, 500, 503); Codex's codes as the ChatGPT backend answers them;
// Google's canonical codes as google.rpc.Code maps them to HTTP
// (googleapis/google/rpc/code.proto).
var streamCodeStatus = map[string]int{
	"RESOURCE_EXHAUSTED":      429,
	"UNAVAILABLE":             503,
	"INTERNAL":                500,
	"DEADLINE_EXCEEDED":       504,
	"INVALID_ARGUMENT":        400,
	"FAILED_PRECONDITION":     400,
	"OUT_OF_RANGE":            400,
	"UNAUTHENTICATED":         401,
	"PERMISSION_DENIED":       403,
	"NOT_FOUND":               404,
	"ABORTED":                 409,
	"ALREADY_EXISTS":          409,
	"CANCELLED":               499,
	"UNIMPLEMENTED":           501,
	"UNKNOWN":                 500,
	"DATA_LOSS":               500,
	"overloaded_error":        529,
	"rate_limit_error":        429,
	"api_error":               500,
	"invalid_request_error":   400,
	"authentication_error":    401,
	"permission_error":        403,
	"not_found_error":         404,
	"request_too_large":       413,
	"billing_error":           402,
	"timeout_error":           504,
	"server_is_overloaded":    503,
	"slow_down":               503,
	"rate_limit_exceeded":     429,
	"insufficient_quota":      429,
	"usage_limit_reached":     429,
	"usage_not_included":      429,
	"server_overloaded":       503, // Codex's codex_error_info
	"invalid_api_key":         401, // OpenAI: "Incorrect API key provided"
	"invalid_organization":    401,
	"account_deactivated":     401,
	"token_expired":           401, // ChatGPT backend (Codex): the access token
	"context_length_exceeded": 400,
	"invalid_prompt":          400,
	"server_error":            500,
	// Codex's CodexErrorInfo names, as relays pass them on.
	"context_window_exceeded":       400,
	"quota_exceeded":                429,
	"content_policy_violation":      400,
	"cyber_policy":                  400,
	"bio_policy":                    400,
	"misalignment_policy_violation": 400,
	"invalid_image_request":         400,
}

// transportVerdict names a failure that left no HTTP response. All of
// them are transient: the request may not have reached the upstream, and
// a short retry on the same credential is the cheapest cure.
func transportVerdict(err error) Verdict {
	var dnsErr *net.DNSError
	var netErr net.Error
	reason := "network error talking to the upstream"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason = "timed out waiting for the upstream"
	case errors.As(err, &dnsErr):
		reason = "could not resolve the upstream's address"
	case errors.As(err, &netErr) && netErr.Timeout():
		reason = "timed out waiting for the upstream"
	case errors.Is(err, syscall.ECONNRESET):
		reason = "the upstream reset the connection"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "the upstream refused the connection"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		reason = "the upstream closed the connection early"
	}
	return Verdict{Class: Transient, Reason: reason}
}

// Profile is what subpool knows about one provider: its wire format, how
// far its rate limits reach, and its table of error meanings. Get one
// from Lookup or Custom; the zero value knows nothing but HTTP statuses.
type Profile struct {
	Name string
	Wire string // "anthropic", "openai" or "gemini"
	// LimitScope is "credential" (each credential has its own limits) or
	// "egress" (the upstream counts per IP address, so one 429 cools every
	// credential of the provider).
	LimitScope string

	rules []rule
	// zai: z.ai business codes may hide in "[1308][…]" message prefixes
	// and its reset stamps are Beijing wall-clock time.
	zai bool
	// google: Google's quota resets are read (RetryInfo, Code Assist's
	// reset, the daily reset at midnight Pacific).
	google bool
}

// Limit scopes a profile may declare.
const (
	LimitCredential = "credential"
	LimitEgress     = "egress"
)

// Lookup returns the built-in profile for name ("anthropic", "openai",
// "chatgpt", "zai", "google", "anthropic-compatible", "openai-compatible"),
// or nil. "google" speaks the "gemini" wire and serves Gemini API keys
// and Google logins (Code Assist) alike.
// Each call returns a fresh copy, safe to adjust.
func Lookup(name string) *Profile {
	b := builtins[name]
	if b == nil {
		return nil
	}
	p := *b
	return &p
}

// Names lists the built-in profiles, for help texts.
func Names() []string {
	return []string{"anthropic", "openai", "chatgpt", "zai", "google", "anthropic-compatible", "openai-compatible"}
}

// Custom returns the profile for a provider from config: a built-in name
// speaking its own wire keeps its table; anything else gets the generic
// compatible table for its wire (plus z.ai's business codes when name is
// "zai"), and the "gemini" wire Google's table, whatever the name.
// limitScope is "credential" or "egress"; anything else means credential.
// An unknown wire gets a table that knows every wire.
func Custom(name, wire, limitScope string) *Profile {
	var p Profile
	if b := builtins[name]; b != nil && b.Wire == wire {
		p = *b
	} else {
		switch wire {
		case "anthropic":
			p = *builtins["anthropic-compatible"]
		case "openai":
			p = *builtins["openai-compatible"]
		case "gemini":
			p = *builtins["google"]
		default:
			p = anyProfile
		}
		if name == "zai" {
			p.rules = concat(zaiRules, p.rules)
			p.zai = true
		}
	}
	p.Name, p.Wire = name, wire
	p.LimitScope = LimitCredential
	if strings.EqualFold(strings.TrimSpace(limitScope), LimitEgress) {
		p.LimitScope = LimitEgress
	}
	return &p
}
