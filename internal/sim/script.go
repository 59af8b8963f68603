package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Step is one scripted answer. The zero Step is a normal success.
//
// Which answer a Step gives:
//   - Drop: the connection closes with no response at all.
//   - Body set: Body is sent raw with Status (0 means 200).
//   - Status other than 0 or 200: an error in the route's provider shape
//     with the canned body for that status (see ServerError).
//   - otherwise the normal simulated success, changed by CutAfter,
//     StreamError and Header; quotas still apply to it.
//
// Header values and Body may hold placeholders filled in when the answer
// is sent: {{request_id}}, {{unix}} and {{unix+N}} (epoch seconds, now on
// Options.Clock plus N seconds), {{rfc3339}} and {{rfc3339+N}}. The canned
// steps use them so a reset time is relative to when the 429 is served,
// not to when the test built the Step.
type Step struct {
	Status int               // 0 = normal success
	Header map[string]string // extra response headers; they override the sim's own
	Body   string            // raw body for an error status
	// Delay is waited before the headers, on top of Options.Latency, on
	// wall time. A client that leaves ends it, and the request is
	// recorded as Cancelled.
	Delay time.Duration
	// CutAfter cuts the connection after this many content deltas of a
	// streamed success (text or tool-argument deltas); when the answer has
	// fewer, after the last one, before the closing events. Negative cuts
	// right after the opening events, before any delta. On a JSON answer
	// (or an error) any non-zero value sends the headers and half the
	// body, then cuts.
	CutAfter int
	// StreamError answers 200 SSE whose first and only event carries this
	// data, then ends the stream cleanly; it streams even when the request
	// did not ask to. The event name is the data's "type" field (anthropic
	// "error", Responses "response.failed"); Chat Completions sends a bare
	// data line. See StreamOverloaded.
	StreamError string
	// ErrorAfter moves StreamError into a normal streamed success: -1
	// sends it after the opening events (message_start,
	// response.created), before any content; N > 0 after N content
	// deltas. The stream then ends cleanly, as upstreams end it after an
	// error event. 0 keeps it the first and only event.
	ErrorAfter int
	// Times repeats the step; 0 and 1 both mean once.
	Times int
	// Model, when set, limits the step to requests for that model: other
	// models pass it by and it waits in the queue for its own. This plays
	// model-scoped limits.
	Model string
	// Drop closes the connection without answering, after Delay: an
	// upstream that crashed or reset the connection.
	Drop bool

	// google marks a canned Google step, whose Body is reshaped for the
	// route it lands on; assist is its Code Assist answer, when that wire
	// answers differently (google_errors.go).
	google bool
	assist *altAnswer
}

type queued struct {
	step Step
	left int
}

// Script appends steps to credential's queue and lifts any Always. Each
// request of that credential consumes the first step that matches its
// model; once none is left, the credential succeeds normally again.
func (s *Server) Script(credential string, steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.credLocked(credential)
	cs.always = nil
	for _, st := range steps {
		cs.queue = append(cs.queue, queued{step: st, left: max(st.Times, 1)})
	}
}

// Always makes every request of credential (for step.Model, when set)
// answer step until Clear or Script. It replaces the queue; Times is
// ignored.
func (s *Server) Always(credential string, step Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.credLocked(credential)
	cs.queue = nil
	cs.always = &step
}

// Clear drops credential's queue and Always. Quota and utilization stay.
func (s *Server) Clear(credential string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.creds[credential]; cs != nil {
		cs.queue = nil
		cs.always = nil
	}
}

// takeStep consumes the step that answers this request, if any.
func (s *Server) takeStep(credential, model string) (Step, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.creds[credential]
	if cs == nil {
		return Step{}, false
	}
	if a := cs.always; a != nil && (a.Model == "" || a.Model == model) {
		return *a, true
	}
	for i := range cs.queue {
		q := &cs.queue[i]
		if q.step.Model != "" && q.step.Model != model {
			continue
		}
		st := q.step
		q.left--
		if q.left == 0 {
			cs.queue = append(cs.queue[:i:i], cs.queue[i+1:]...)
		}
		return st, true
	}
	return Step{}, false
}

// Canned steps. Bodies are the real shapes quoted in
// shared/reference/protocols.md.

const anthropicRateLimitMsg = "This request would exceed your account's rate limit. Please try again later."

// RateLimited is a 429 of provider ("anthropic", "openai" or "google";
// "claude", "codex", "chatgpt" and "gemini" are accepted aliases). With
// retryAfter > 0 it carries the hints that provider sends: retry-after,
// plus anthropic-ratelimit-requests-reset (RFC 3339) or
// x-ratelimit-reset-requests / retry-after-ms and "Please try again in"
// in the message; Google's per-minute QuotaFailure with RetryInfo and
// "Please retry in" (Gemini API) or "Your quota will reset after" with
// ErrorInfo RATE_LIMIT_EXCEEDED (Code Assist). retryAfter 0 gives a 429
// with no time in it (Code Assist: its per-minute quota message).
func RateLimited(provider string, retryAfter time.Duration) Step {
	secs := ceilSeconds(retryAfter)
	switch canonical(provider) {
	case Google:
		return googleRateLimited(retryAfter)
	case Anthropic:
		st := Step{Status: 429, Body: anthropicErrorTemplate("rate_limit_error", anthropicRateLimitMsg)}
		if retryAfter > 0 {
			st.Header = map[string]string{
				"retry-after":                            strconv.Itoa(secs),
				"anthropic-ratelimit-requests-limit":     "50",
				"anthropic-ratelimit-requests-remaining": "0",
				"anthropic-ratelimit-requests-reset":     fmt.Sprintf("{{rfc3339+%d}}", secs),
			}
		}
		return st
	default:
		msg := "Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1."
		st := Step{Status: 429}
		if retryAfter > 0 {
			msg += " Please try again in " + openaiDuration(retryAfter) + "."
			st.Header = map[string]string{
				"retry-after":                    strconv.Itoa(secs),
				"retry-after-ms":                 strconv.FormatInt(retryAfter.Milliseconds(), 10),
				"x-ratelimit-limit-requests":     "500",
				"x-ratelimit-remaining-requests": "0",
				"x-ratelimit-reset-requests":     openaiDuration(retryAfter),
			}
		}
		msg += " Visit https://platform.openai.com/account/rate-limits to learn more."
		st.Body = string(openaiError(msg, "requests", "rate_limit_exceeded"))
		return st
	}
}

// Overloaded is Anthropic's 529: the service is overloaded for everyone.
func Overloaded() Step {
	return Step{Status: 529, Body: anthropicErrorTemplate("overloaded_error", "Overloaded")}
}

// ServerError is status with the canned body of the route's provider
// (Anthropic api_error, OpenAI server_error, and so on).
func ServerError(status int) Step { return Step{Status: status} }

// UsageLimitReached is the ChatGPT Codex backend's 429 when a plan's quota
// is spent, with resets_at (epoch seconds) and resets_in_seconds counted
// from when it is served.
func UsageLimitReached(resetsIn time.Duration) Step {
	return Step{Status: 429, Body: usageLimitTemplate(resetsIn, true)}
}

// UnifiedLimitReached is the Anthropic subscription 429: unified status
// rejected on the five-hour window, with its reset as epoch seconds in the
// headers and no retry-after.
func UnifiedLimitReached(resetsIn time.Duration) Step {
	at := fmt.Sprintf("{{unix+%d}}", ceilSeconds(resetsIn))
	return Step{
		Status: 429,
		Body:   anthropicErrorTemplate("rate_limit_error", anthropicRateLimitMsg),
		Header: map[string]string{
			"anthropic-ratelimit-unified-status":               "rejected",
			"anthropic-ratelimit-unified-reset":                at,
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
			"anthropic-ratelimit-unified-5h-status":            "rejected",
			"anthropic-ratelimit-unified-5h-utilization":       "1.0",
			"anthropic-ratelimit-unified-5h-reset":             at,
		},
	}
}

// SpendLimitReached is Anthropic's 429 for a monthly spend cap, which no
// retry fixes.
func SpendLimitReached() Step {
	return Step{Status: 429, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits. You will regain access on the first of next month.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"{{request_id}}"}`}
}

// Unauthorized is a 401 for an invalid key in provider's shape. Google
// refuses a bad Gemini API key with a 400 INVALID_ARGUMENT
// (API_KEY_INVALID), a bad Code Assist token with a 401 UNAUTHENTICATED.
func Unauthorized(provider string) Step {
	switch canonical(provider) {
	case Google:
		return googleStep(keyInvalid(), unauthenticated("ACCESS_TOKEN_TYPE_UNSUPPORTED", "{{service}}", "{{rpc}}"))
	case Anthropic:
		return Step{Status: 401, Body: anthropicErrorTemplate("authentication_error", "invalid x-api-key")}
	}
	return Step{Status: 401, Body: string(openaiError("Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"))}
}

// TokenExpired is a 401 for an expired OAuth access token: the case a
// refresh fixes. The Anthropic wording is what Claude Code shows; the
// OpenAI one follows the same shape with code token_expired; Google's is
// a 401 UNAUTHENTICATED whose ErrorInfo says ACCESS_TOKEN_EXPIRED.
func TokenExpired(provider string) Step {
	switch canonical(provider) {
	case Google:
		e := unauthenticated("ACCESS_TOKEN_EXPIRED", "{{service}}", "{{rpc}}")
		return googleStep(e, e)
	case Anthropic:
		return Step{Status: 401, Body: anthropicErrorTemplate("authentication_error", "OAuth token has expired. Please obtain a new token or refresh your existing token.")}
	}
	return Step{Status: 401, Body: string(openaiError("Provided authentication token is expired. Please try signing in again.", "invalid_request_error", "token_expired"))}
}

// StreamOverloaded is a 200 SSE that fails at once: Anthropic's error
// event with overloaded_error, or a Responses response.failed with
// server_is_overloaded (what the Codex backend sends inside a stream), or
// Google's {"error":{…UNAVAILABLE}} as the one data event.
func StreamOverloaded(provider string) Step {
	switch canonical(provider) {
	case Google:
		return Step{StreamError: googleStreamOverloaded}
	case Anthropic:
		return Step{StreamError: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}
	}
	return Step{StreamError: `{"type":"response.failed","sequence_number":0,"response":{"id":"resp_sim_failed","object":"response","status":"failed","error":{"code":"server_is_overloaded","message":"Our servers are currently overloaded. Please try again later."},"output":[],"usage":null}}`}
}

func canonical(provider string) string {
	switch strings.ToLower(provider) {
	case "anthropic", "claude":
		return Anthropic
	case "openai", "codex", "chatgpt":
		return OpenAI
	case "google", "gemini":
		return Google
	}
	panic("sim: unknown provider " + strconv.Quote(provider) + ` (want "anthropic", "openai" or "google")`)
}

func anthropicErrorTemplate(typ, msg string) string {
	return string(anthropicError(typ, msg, "{{request_id}}"))
}

func usageLimitTemplate(resetsIn time.Duration, announce bool) string {
	if !announce {
		return `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"pro"}}`
	}
	secs := ceilSeconds(resetsIn)
	return fmt.Sprintf(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"pro","resets_at":{{unix+%d}},"resets_in_seconds":%d}}`, secs, secs)
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

// openaiDuration formats like OpenAI's reset headers ("1s", "6m0s",
// "120ms"), which is Go's own format at millisecond precision.
func openaiDuration(d time.Duration) string {
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d.Round(time.Millisecond).String()
}

// render fills the placeholders of a Body.
func (x *exchange) render(s string) []byte { return []byte(x.renderString(s)) }

func (x *exchange) renderString(s string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		tok := s[i+2 : i+j]
		if v, ok := x.placeholder(tok); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+2])
		}
		s = s[i+j+2:]
	}
	b.WriteString(s)
	return b.String()
}

func (x *exchange) placeholder(tok string) (string, bool) {
	if x.provider == Google {
		if v, ok := x.googlePlaceholder(tok); ok {
			return v, true
		}
	}
	if tok == "request_id" {
		return x.reqID, true
	}
	name, off, _ := strings.Cut(tok, "+")
	secs := 0
	if off != "" {
		n, err := strconv.Atoi(off)
		if err != nil {
			return "", false
		}
		secs = n
	}
	at := x.s.clk.Now().Add(time.Duration(secs) * time.Second)
	switch name {
	case "unix":
		return strconv.FormatInt(at.Unix(), 10), true
	case "rfc3339":
		return at.UTC().Format(time.RFC3339), true
	}
	return "", false
}
