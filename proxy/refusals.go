package proxy

// Refusals: subpool's own answers in the provider's error shape, with what
// they tell the client's retry loop, and the upstream's refusals relayed.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/translate"
)

// retryHint is what a refusal of subpool's tells the client's retry loop.
// Claude Code, the Anthropic and the OpenAI SDKs obey x-should-retry
// before their own rule (which retries 408, 409, 429 and every 5xx), so a
// refusal that nothing will change soon says so, and the person sees its
// message at once instead of after a minute of silent retries.
type retryHint bool

const (
	// mayRetry sends no hint: the client's own rule applies, with
	// retry-after when a time is known.
	mayRetry retryHint = false
	// noRetry sends x-should-retry: false.
	noRetry retryHint = true
)

// writeError answers in the shape the client's SDK parses for its wire, so
// that a refusal by subpool reads like any other API error, with a message
// a person can act on.
func writeError(w http.ResponseWriter, wire Wire, status int, msg string, retryAfter time.Duration, hint retryHint) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-subpool-error", "1")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
	}
	if hint == noRetry {
		h.Set("X-Should-Retry", "false")
	}
	if wire == WireGemini {
		msg = geminiWords(msg)
		if hint == noRetry && status >= 500 {
			// Gemini CLI retries any other 5xx up to 10 times, each a
			// new request; a 503 with a RetryInfo over 300 s it takes as
			// final (googleFinal).
			status = http.StatusServiceUnavailable
		}
	}
	w.WriteHeader(status)
	if wire == WireGemini {
		w.Write(googleRefusal(status, ownWords(msg), retryAfter, hint))
		return
	}
	w.Write(errorBody(wire, status, ownWords(msg)))
}

// googleFinal is the shortest RetryInfo delay Gemini CLI takes as final:
// it reads no x-should-retry or Retry-After, but gives up at once on a
// quota error whose retryDelay is over 300 s (classifyGoogleError,
// Gemini CLI 0.61.0), and waits at least the delay before retrying one
// under it.
const googleFinal = 301 * time.Second

// googleRefusal is subpool's refusal in Google's shape, saying in the one
// way Gemini CLI reads whether to retry: a RetryInfo on the statuses its
// quota rule covers (429, 499, 503).
func googleRefusal(status int, msg string, retryAfter time.Duration, hint retryHint) []byte {
	delay := retryAfter
	if hint == noRetry {
		delay = max(delay, googleFinal)
	}
	if delay <= 0 || !(status == http.StatusTooManyRequests || status == 499 || status == http.StatusServiceUnavailable) {
		return googleError(status, msg)
	}
	type detail struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
	}
	type ge struct {
		Code    int      `json:"code"`
		Message string   `json:"message"`
		Status  string   `json:"status"`
		Details []detail `json:"details"`
	}
	b, _ := json.Marshal(struct {
		Error ge `json:"error"`
	}{ge{Code: status, Message: msg, Status: translate.GoogleStatus(status),
		Details: []detail{{"type.googleapis.com/google.rpc.RetryInfo", strconv.Itoa(int(math.Ceil(delay.Seconds()))) + "s"}}}})
	return b
}

// clientRewrites are phrases Claude Code never shows: an error whose text
// holds one is replaced by Claude Code's own advice about the person's own
// login ("Not logged in · Please run /login", "Invalid API key · Fix
// external API key"), which in front of subpool is the wrong advice: the
// phrase came from an upstream credential subpool holds. Read in Claude
// Code 2.1.197's bundled code; the replacement keeps the meaning.
var clientRewrites = strings.NewReplacer(
	"x-api-key", "API key", "X-Api-Key", "API key",
	"OAuth token has been revoked", "login token was revoked",
	"OAuth authentication", "login authentication",
	"not a valid API key for this workspace", "not a valid key for its workspace",
	"Credit balance is too low", "credit is too low", "credit balance is too low", "credit is too low",
)

// ownWords is a message of subpool's own as every client will show it.
func ownWords(msg string) string { return clientRewrites.Replace(msg) }

// geminiRetried are the words Gemini CLI 0.61.0 retries on silently,
// whatever else the error says (retryWithBackoff: up to 10 calls, each
// waiting its RetryInfo): a final refusal of subpool's quoting an upstream
// overload in them would start that loop again.
var geminiRetried = regexp.MustCompile(`(?i)exhausted your capacity|capacity exceeded|MODEL_CAPACITY_EXHAUSTED`)

// geminiWords is msg without the phrases of geminiRetried, same meaning.
func geminiWords(msg string) string {
	return geminiRetried.ReplaceAllStringFunc(msg, func(m string) string {
		switch strings.ToLower(m) {
		case "exhausted your capacity":
			return "used up your share"
		case "capacity exceeded":
			return "overloaded"
		}
		return "no model capacity"
	})
}

// errorBody is subpool's own error body on wire; translate owns the
// shapes and what each provider calls a status.
func errorBody(wire Wire, status int, msg string) []byte {
	return translate.StatusBody(wire.errorShape(), status, msg)
}

// googleError is Google's error body (google.rpc.Status as JSON), which
// both the Gemini API and Code Assist send.
func googleError(status int, msg string) []byte { return errorBody(WireGemini, status, msg) }

// errorShape is the translate target whose error bodies wire's clients
// parse: one per wire, since OpenAI's two APIs share theirs.
func (w Wire) errorShape() translate.Target {
	switch w {
	case WireAnthropic:
		return translate.Anthropic
	case WireGemini:
		return translate.Gemini
	}
	return translate.OpenAIChat
}

// statusEvent is the error event standing for an HTTP error of status, in
// the shape the wire's streams carry errors: Anthropic's error body as the
// data of `event: error`, OpenAI's `{"type":"error","code",...}` (code ""
// takes the status's).
func statusEvent(wire Wire, status int, code, msg string) []byte {
	var b []byte
	if wire == WireGemini {
		// Gemini streams carry an error as a data event of its own.
		return append(append([]byte("data: "), googleError(status, geminiWords(msg))...), '\n', '\n')
	}
	if wire == wireOpenAIChat {
		// A Chat Completions stream has no event names: its SDKs throw on
		// a chunk that carries "error", with the API's error body.
		return append(append([]byte("data: "), errorBody(WireOpenAI, status, msg)...), '\n', '\n')
	}
	if wire == WireOpenAI {
		var c any // null when the status has no code
		if code == "" {
			code = translate.OpenAICode(status)
		}
		if code != "" {
			c = code
		}
		b, _ = json.Marshal(map[string]any{"type": "error", "code": c, "message": msg, "param": nil})
	} else {
		b = errorBody(WireAnthropic, status, msg)
	}
	return append(append([]byte("event: error\ndata: "), b...), '\n', '\n')
}

// errorEvent is an upstream's HTTP error body as its wire's error event,
// for a client that already has a stream's headers: an Anthropic error
// body is the event's data as it is; an OpenAI one keeps its code and
// message.
func errorEvent(wire Wire, status int, body []byte) []byte {
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		return statusEvent(wire, status, "", "the upstream answered "+strconv.Itoa(status)+": "+quoteShort(string(body)))
	}
	if wire == WireGemini {
		var c bytes.Buffer
		if json.Compact(&c, body) == nil {
			return append(append([]byte("data: "), c.Bytes()...), '\n', '\n')
		}
	}
	if wire != WireOpenAI && wire != wireOpenAIChat && e.Type == "error" && e.Error.Type != "" {
		var c bytes.Buffer
		if json.Compact(&c, body) == nil {
			return append(append([]byte("event: error\ndata: "), c.Bytes()...), '\n', '\n')
		}
	}
	code, _ := e.Error.Code.(string)
	if code == "" {
		code = e.Error.Type
	}
	return statusEvent(wire, status, code, e.Error.Message)
}

// fail answers with subpool's own provider-shaped error, naming credID
// (the credential whose attempt led to it, "" for none).
func (rn *run) fail(credID string, status int, msg string, retryAfter time.Duration, hint retryHint) outcome {
	out := outcome{status: status, class: classRefused, cred: credID}
	if rn.committed {
		rn.w.Write(statusEvent(rn.eventWire(), status, "", ownWords(msg)))
		http.NewResponseController(rn.w).Flush()
		return out
	}
	rn.setHeaders(rn.w.Header(), credID)
	out.status = rn.refuse(rn.w, status, msg, retryAfter, hint)
	return out
}

// relay gives the client the upstream's refusal: an HTTP error as it came,
// byte for byte however large (only its head was read to classify it); an
// error inside a 200 stream as the HTTP error it stands for, with the
// provider's JSON error body, never as an empty 200. Once the client has
// a stream's headers (commit), the refusal goes in the stream: the
// upstream's own events up to its error, or its HTTP error as the wire's
// error event.
func (rn *run) relay(credID string, a *answer, status int) outcome {
	out := outcome{class: a.verdict.Class, cred: credID, status: status}
	if a.resp == nil {
		f := rn.fail(credID, http.StatusBadGateway, policy.Reason(a.verdict), 0, mayRetry)
		f.class = a.verdict.Class
		return f
	}
	defer a.resp.Body.Close()
	rn.redactAnswer(a) // the pool's secrets out of the upstream's words (redact.go)
	if rn.committed {
		ev := a.head
		if !a.inStream {
			ev = errorEvent(rn.eventWire(), status, a.head)
		}
		rn.w.Write(ev)
		http.NewResponseController(rn.w).Flush()
		return out
	}
	h := rn.w.Header()
	copyHeader(h, a.resp.Header)
	rn.setHeaders(h, credID)
	if a.verdict.Class == classify.ClientError {
		// The request itself is refused (a 429 credits_required among
		// them): sent again it is refused again.
		h.Set("X-Should-Retry", "false")
	}
	if a.inStream {
		body := streamErrorBody(rn.wire, a.errData)
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		rn.w.WriteHeader(status)
		rn.w.Write(body)
		return out
	}
	rn.w.WriteHeader(status)
	if _, err := rn.w.Write(a.head); err != nil {
		return out
	}
	io.Copy(rn.w, a.resp.Body)
	return out
}

// streamErrorBody is an in-stream error event's data as the error body the
// same API sends with an HTTP status. Anthropic's error event and a Chat
// Completions error chunk already are one; a Responses `response.failed`
// or `error` event has its error elsewhere and is reshaped.
func streamErrorBody(wire Wire, data []byte) []byte {
	var ev struct {
		Type     string          `json:"type"`
		Error    json.RawMessage `json:"error"`
		Code     any             `json:"code"`
		Message  string          `json:"message"`
		Param    any             `json:"param"`
		Response struct {
			Error *struct {
				Code    any    `json:"code"`
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return errorBody(wire, http.StatusBadGateway, "the upstream sent an unreadable error: "+quoteShort(string(data)))
	}
	if len(ev.Error) > 0 && ev.Error[0] == '{' {
		return data
	}
	type oe struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	}
	e := oe{Message: ev.Message, Type: "server_error", Param: ev.Param, Code: ev.Code}
	if r := ev.Response.Error; r != nil {
		e.Message, e.Code = r.Message, r.Code
		if r.Type != "" {
			e.Type = r.Type
		}
	}
	if c, ok := e.Code.(string); ok && e.Type == "server_error" {
		switch c {
		case "context_length_exceeded", "invalid_prompt", "invalid_request_error":
			e.Type = "invalid_request_error"
		case "rate_limit_exceeded", "insufficient_quota", "usage_limit_reached":
			e.Type = c
		}
	}
	b, _ := json.Marshal(struct {
		Error oe `json:"error"`
	}{e})
	return b
}
