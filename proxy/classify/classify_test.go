package classify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var testNow = time.Date(2026, 9, 10, 12, 0, 0, 0, time.UTC)

const anthropic429 = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}`

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func classify429(p string, h http.Header, body string) Verdict {
	return Classify(Lookup(p), Response{Status: 429, Header: h, Body: []byte(body)}, testNow)
}

// retryAfterCases are the rows of TestRetryAfterSignals.
func retryAfterCases() []retryAfterCase {
	unix := func(d time.Duration) string { return fmt.Sprint(testNow.Add(d).Unix()) }
	return []retryAfterCase{
		{"retry-after seconds", hdr("Retry-After", "30"), anthropic429, 30 * time.Second},
		{"retry-after HTTP date", hdr("Retry-After", testNow.Add(90*time.Second).Format(http.TimeFormat)), anthropic429, 90 * time.Second},
		{"retry-after-ms", hdr("Retry-After-Ms", "1500"), anthropic429, 1500 * time.Millisecond},
		{"retry-after-ms fractional", hdr("retry-after-ms", "250.5"), anthropic429, 250500 * time.Microsecond},
		{"negative ignored", hdr("Retry-After", "-5"), anthropic429, 0},
		{"NaN ignored", hdr("Retry-After", "NaN"), anthropic429, 0},
		{"Inf ignored", hdr("Retry-After-Ms", "+Inf"), anthropic429, 0},
		{"exponent ignored", hdr("Retry-After", "1e3"), anthropic429, 0},
		{"garbage ignored", hdr("Retry-After", "soon"), anthropic429, 0},
		{"absurd ignored", hdr("Retry-After", "99999999"), anthropic429, 0},
		{"just under the cap kept", hdr("Retry-After", fmt.Sprint(int(MaxRetryAfter/time.Second))), anthropic429, MaxRetryAfter},
		{"past date ignored", hdr("Retry-After", testNow.Add(-time.Hour).Format(http.TimeFormat)), anthropic429, 0},
		{"latest of unrelated hints", hdr("Retry-After", "10", "Retry-After-Ms", "20000"), anthropic429, 20 * time.Second},
		{"unified rejected window beats a later retry-after", hdr(
			"Retry-After", "7200",
			"Anthropic-Ratelimit-Unified-5h-Status", "rejected",
			"Anthropic-Ratelimit-Unified-5h-Reset", unix(time.Hour)), anthropic429, time.Hour},
		// Anthropic's RFC 3339 resets are cut to the second: a reset just
		// short of retry-after is the same instant, and calling back at
		// the truncated stamp would be a wasted call.
		{"truncated exhausted reset yields to retry-after", hdr(
			"Retry-After", "2",
			"Anthropic-Ratelimit-Requests-Remaining", "0",
			"Anthropic-Ratelimit-Requests-Reset", testNow.Add(1500*time.Millisecond).Truncate(time.Second).Format(time.RFC3339)), anthropic429, 2 * time.Second},
		{"allowed window's reset does not apply", hdr(
			"Retry-After", "60",
			"Anthropic-Ratelimit-Unified-7d-Status", "allowed",
			"Anthropic-Ratelimit-Unified-7d-Reset", unix(5*24*time.Hour)), anthropic429, time.Minute},
		{"two rejected windows: wait for both", hdr(
			"Anthropic-Ratelimit-Unified-5h-Status", "rejected",
			"Anthropic-Ratelimit-Unified-5h-Reset", unix(time.Hour),
			"Anthropic-Ratelimit-Unified-7d-Status", "rejected",
			"Anthropic-Ratelimit-Unified-7d-Reset", unix(48*time.Hour)), anthropic429, 48 * time.Hour},
		{"unified total reset when rejected", hdr(
			"anthropic-ratelimit-unified-status", "rejected",
			"anthropic-ratelimit-unified-reset", unix(3*time.Hour)), anthropic429, 3 * time.Hour},
		{"unified reset in milliseconds is absurd", hdr(
			"Anthropic-Ratelimit-Unified-Status", "rejected",
			"Anthropic-Ratelimit-Unified-Reset", fmt.Sprint(testNow.Add(time.Hour).UnixMilli())), anthropic429, 0},
		{"hand-built lower-case keys", http.Header{
			"anthropic-ratelimit-unified-5h-status": {"rejected"},
			"anthropic-ratelimit-unified-5h-reset":  {unix(time.Hour)},
			"RETRY-AFTER":                           {"10"},
		}, anthropic429, time.Hour},
		{"hand-built keys: OpenAI and Codex", http.Header{
			"x-ratelimit-remaining-tokens": {"0"},
			"x-ratelimit-reset-tokens":     {"2m"},
			"x-codex-primary-used-percent": {"100"},
			"x-codex-primary-reset-at":     {unix(3 * time.Minute)},
		}, anthropic429, 3 * time.Minute},
		{"API key: the exhausted bucket's reset", hdr(
			"Anthropic-Ratelimit-Tokens-Remaining", "0",
			"Anthropic-Ratelimit-Tokens-Reset", testNow.Add(40*time.Second).Format(time.RFC3339),
			"Anthropic-Ratelimit-Requests-Remaining", "42",
			"Anthropic-Ratelimit-Requests-Reset", testNow.Add(50*time.Second).Format(time.RFC3339),
			"Anthropic-Ratelimit-Input-Tokens-Remaining", "0",
			"Anthropic-Ratelimit-Input-Tokens-Reset", testNow.Add(20*time.Second).Format(time.RFC3339)), anthropic429, 40 * time.Second},
		{"API key: bad RFC 3339 ignored", hdr(
			"Anthropic-Ratelimit-Tokens-Remaining", "0",
			"Anthropic-Ratelimit-Tokens-Reset", "tomorrow"), anthropic429, 0},
		{"body resets_in_seconds", nil, `{"error":{"type":"usage_limit_reached","resets_in_seconds":3600}}`, time.Hour},
		{"body resets_at", nil, `{"error":{"type":"usage_limit_reached","resets_at":` + unix(2*time.Hour) + `}}`, 2 * time.Hour},
		{"body resets_at beats a shorter retry-after", hdr("Retry-After", "60"), `{"error":{"type":"usage_limit_reached","resets_at":` + unix(2*time.Hour) + `}}`, 2 * time.Hour},
		{"body retry_after_ms", nil, `{"error":{"type":"rate_limit_error","retry_after_ms":4500}}`, 4500 * time.Millisecond},
		{"body negative resets_in ignored", nil, `{"error":{"type":"usage_limit_reached","resets_in_seconds":-3600}}`, 0},
		{"body string number ignored when garbage", nil, `{"error":{"type":"usage_limit_reached","resets_in_seconds":"soon"}}`, 0},
		{"message: try again in", nil, `{"error":{"code":"rate_limit_exceeded","message":"Please try again in 1m30s."}}`, 90 * time.Second},
		{"message: try again in words", nil, `{"error":{"code":"rate_limit_exceeded","message":"Try again in 2 hours and 5 minutes."}}`, 2*time.Hour + 5*time.Minute},
	}
}

type retryAfterCase struct {
	name string
	h    http.Header
	body string
	want time.Duration
}

// Reset signals: each one read, garbage never trusted, and when several
// apply the exhausted limit's wins, else the latest.
func TestRetryAfterSignals(t *testing.T) {
	cases := retryAfterCases()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := classify429("anthropic", c.h, c.body)
			if v.Class != RateLimit || v.RetryAfter != c.want {
				t.Errorf("got %s %v, want rate_limit %v (%s)", v.Class, v.RetryAfter, c.want, v.Reason)
			}
		})
	}
}

func TestOpenAIResetHeaders(t *testing.T) {
	body := `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"requests exhausted", hdr("X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "6m0s",
			"X-Ratelimit-Remaining-Tokens", "1000", "X-Ratelimit-Reset-Tokens", "20ms"), 6 * time.Minute},
		{"tokens exhausted", hdr("X-Ratelimit-Remaining-Requests", "10", "X-Ratelimit-Reset-Requests", "6m0s",
			"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "1s"), time.Second},
		{"nothing exhausted, remaining unknown: latest", hdr("X-Ratelimit-Reset-Requests", "2s", "X-Ratelimit-Reset-Tokens", "1h2m3.5s"),
			time.Hour + 2*time.Minute + 3500*time.Millisecond},
		{"bare seconds from a compatible server", hdr("X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "12"), 12 * time.Second},
		{"garbage duration", hdr("X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "-5s"), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := classify429("openai", c.h, body)
			if v.Class != RateLimit || v.RetryAfter != c.want {
				t.Errorf("got %s %v, want %v", v.Class, v.RetryAfter, c.want)
			}
		})
	}
}

// Model scope needs the upstream to name the exhausted limit; utilization
// alone is never enough (shared/reference/prior-art-model-scoped-429.txt).
func TestRateLimitScope(t *testing.T) {
	cases := []struct {
		name string
		p    *Profile
		h    http.Header
		body string
		want Scope
	}{
		{"ambiguous 429", Lookup("anthropic"), nil, anthropic429, ScopeCredential},
		{"low utilization alone is not a model signal", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-5h-Utilization", "0.12",
			"Anthropic-Ratelimit-Unified-7d-Utilization", "0.30"), anthropic429, ScopeCredential},
		{"7d-sonnet rejected, shared windows allowed", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-5h-Status", "allowed",
			"Anthropic-Ratelimit-Unified-7d-Sonnet-Status", "rejected"), anthropic429, ScopeModel},
		{"model window and shared window both rejected", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-7d-Status", "rejected",
			"Anthropic-Ratelimit-Unified-7d_oi-Status", "rejected"), anthropic429, ScopeCredential},
		{"unknown window rejected stays credential-wide", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-1h-Status", "rejected",
			"Anthropic-Ratelimit-Unified-7d_oi-Status", "rejected"), anthropic429, ScopeCredential},
		{"representative claim names a model limit", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-Status", "rejected",
			"Anthropic-Ratelimit-Unified-Representative-Claim", "seven_day_sonnet"), anthropic429, ScopeModel},
		{"representative claim names a model, but nothing rejected", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-Status", "allowed",
			"Anthropic-Ratelimit-Unified-Representative-Claim", "seven_day_opus"), anthropic429, ScopeCredential},
		{"overage rejected is not a model signal", Lookup("anthropic"), hdr(
			"Anthropic-Ratelimit-Unified-Overage-Status", "rejected"), anthropic429, ScopeCredential},
		{"body names the model window", Lookup("anthropic"), nil,
			`{"type":"error","error":{"type":"rate_limit_error","message":"seven_day_opus limit reached"}}`, ScopeModel},
		{"egress provider: every credential", Custom("proxyco", "anthropic", "egress"), hdr(
			"Anthropic-Ratelimit-Unified-7d-Sonnet-Status", "rejected"), anthropic429, ScopeProvider},
		{"OpenAI message names the model", Lookup("openai"), nil,
			`{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for o3-mini in organization org-x on requests per day (RPD)"}}`, ScopeModel},
		{"OpenAI tier name is not a model", Lookup("openai"), nil,
			`{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for 10KTPM-200RPM in organization org-x on tokens per min."}}`, ScopeCredential},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(c.p, Response{Status: 429, Header: c.h, Body: []byte(c.body)}, testNow)
			if v.Class != RateLimit || v.Scope != c.want {
				t.Errorf("got %s/%s, want rate_limit/%s (%s)", v.Class, v.Scope, c.want, v.Reason)
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}
	cases := []struct {
		name   string
		r      Response
		want   Class
		reason string
	}{
		{"canceled", Response{Err: context.Canceled}, Aborted, "client went away"},
		{"canceled wrapped", Response{Err: fmt.Errorf("reading body: %w", context.Canceled)}, Aborted, "client went away"},
		{"canceled beats an error status", Response{Status: 429, Err: context.Canceled}, Aborted, "client went away"},
		{"deadline", Response{Err: context.DeadlineExceeded}, Transient, "timed out"},
		{"net timeout", Response{Err: timeout}, Transient, "timed out"},
		{"dns", Response{Err: &net.DNSError{Err: "no such host", Name: "api.example.com"}}, Transient, "resolve"},
		{"other", Response{Err: errors.New("tls: handshake failure")}, Transient, "network error"},
		{"error after 200 headers", Response{Status: 200, Err: errors.New("stream error: stream ID 1; INTERNAL_ERROR")}, Transient, "network error"},
		{"error after an error status keeps the status", Response{Status: 529, Err: errors.New("unexpected EOF"), Body: []byte(`{"type":"error","error":{"type":"overloaded_error"`)}, Capacity, "529"},
		{"no status, no error", Response{}, Transient, "no response"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(Lookup("anthropic"), c.r, testNow)
			if v.Class != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("got %s %q, want %s containing %q", v.Class, v.Reason, c.want, c.reason)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestStatusDefaults(t *testing.T) {
	cases := []struct {
		status int
		class  Class
	}{
		{200, OK}, {204, OK}, {302, Transient}, {400, ClientError}, {401, AuthInvalid}, {402, Payment},
		{403, ClientError}, {404, ClientError}, {408, Transient}, {409, Transient}, {413, ClientError},
		{418, ClientError}, {422, ClientError}, {429, RateLimit}, {500, Transient}, {502, Transient},
		{503, Transient}, {504, Transient}, {520, Transient}, {529, Capacity}, {999, Transient},
	}
	for _, c := range cases {
		v := Classify(Lookup("openai-compatible"), Response{Status: c.status}, testNow)
		if v.Class != c.class {
			t.Errorf("%d: got %s, want %s", c.status, v.Class, c.class)
		}
	}
	// Where OAuth logins live, an unexplained 401 earns a refresh first;
	// providers of keys only read it as a dead key.
	for _, n := range []string{"anthropic", "openai", "chatgpt"} {
		if v := Classify(Lookup(n), Response{Status: 401}, testNow); v.Class != AuthExpired {
			t.Errorf("%s 401: got %s", n, v.Class)
		}
	}
	for _, n := range []string{"zai", "anthropic-compatible", "openai-compatible"} {
		if v := Classify(Lookup(n), Response{Status: 401}, testNow); v.Class != AuthInvalid {
			t.Errorf("%s 401: got %s", n, v.Class)
		}
	}
}

func TestProfiles(t *testing.T) {
	for _, n := range Names() {
		p := Lookup(n)
		if p == nil || p.Name != n || (p.Wire != "anthropic" && p.Wire != "openai" && p.Wire != "gemini") || p.LimitScope != LimitCredential {
			t.Errorf("Lookup(%q) = %+v", n, p)
		}
	}
	if Lookup("nope") != nil {
		t.Error("unknown name must give nil")
	}
	a := Lookup("anthropic")
	a.LimitScope = LimitEgress
	if Lookup("anthropic").LimitScope != LimitCredential {
		t.Error("Lookup must return a copy")
	}

	z := Custom("zai", "openai", " Egress ")
	if !z.zai || z.Wire != "openai" || z.LimitScope != LimitEgress {
		t.Errorf("custom zai: %+v", z)
	}
	body := []byte(`{"error":{"code":"1311","message":"Your current subscription plan does not yet include access to GLM-5"}}`)
	if v := Classify(z, Response{Status: 429, Body: body}, testNow); v.Class != Payment || v.Scope != ScopeModel {
		t.Errorf("zai on the OpenAI wire: %+v", v)
	}
	// The same body means nothing special to another provider.
	other := Custom("glm-relay", "openai", "credential")
	if v := Classify(other, Response{Status: 429, Body: body}, testNow); v.Class != RateLimit {
		t.Errorf("z.ai code outside zai: %+v", v)
	}
	if c := Custom("anthropic", "anthropic", "bogus"); c.LimitScope != LimitCredential || len(c.rules) != len(Lookup("anthropic").rules) {
		t.Errorf("built-in name on its own wire keeps its table: %+v", c)
	}
	if c := Custom("x", "grpc", ""); c.Wire != "grpc" || len(c.rules) == 0 {
		t.Errorf("unknown wire: %+v", c)
	}
	// A nil profile still reads both wires.
	if v := Classify(nil, Response{Status: 400, Body: []byte(`{"error":{"code":"insufficient_quota"}}`)}, testNow); v.Class != Payment {
		t.Errorf("nil profile: %+v", v)
	}
	// The zero Profile knows statuses only.
	var zero Profile
	if v := Classify(&zero, Response{Status: 429, Body: []byte(`{"error":{"code":"insufficient_quota"}}`)}, testNow); v.Class != RateLimit {
		t.Errorf("zero profile: %+v", v)
	}
}

func TestClassifyEvent(t *testing.T) {
	p := Lookup("anthropic")
	for _, c := range []struct {
		event, data string
	}{
		{"ping", `{"type": "ping"}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"error"}}`},
		{"", "[DONE]"},
		{"", ""},
		{"", `{"choices":[{"delta":{"content":"{\"error\":1}"}}]}`},
		{"", `{"error":null,"id":"x"}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","delta":"hi"}`},
	} {
		if v, isErr := ClassifyEvent(p, c.event, []byte(c.data), testNow); isErr || v.Class != OK {
			t.Errorf("%q %q: got %+v %v", c.event, c.data, v, isErr)
		}
	}
	// An error event whose data is unreadable is still an error.
	if v, isErr := ClassifyEvent(p, "error", []byte("upstream blew up"), testNow); !isErr || v.Class != Transient {
		t.Errorf("unreadable error event: %+v %v", v, isErr)
	}
	// An Anthropic error event named only by its data's type.
	v, isErr := ClassifyEvent(p, "", []byte(` {"type":"error","error":{"type":"rate_limit_error","message":"x"}}`), testNow)
	if !isErr || v.Class != RateLimit || !strings.HasPrefix(v.Reason, "stream error rate_limit_error") {
		t.Errorf("data-typed error: %+v %v", v, isErr)
	}
}

func TestZaiCodeInMessageOnly(t *testing.T) {
	body := []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"[1305][该模型当前访问量过大，请您稍后再试][2026…]"}}`)
	if v := Classify(Lookup("zai"), Response{Status: 429, Body: body}, testNow); v.Class != Capacity {
		t.Errorf("got %+v", v)
	}
}

func TestReason(t *testing.T) {
	long := strings.Repeat("word ", 100)
	cases := []struct {
		name     string
		status   int
		body     string
		contains []string
		absent   []string
	}{
		{"code and why", 429, anthropic429, []string{"429 rate_limit_error: rate limit — This request"}, nil},
		{"no body: status text", 503, "", []string{"503 Service Unavailable: server error"}, []string{" — "}},
		{"key redacted", 401, `{"error":{"message":"Incorrect API key provided: sk-ant-api03-abcdef. Bearer eyJhbGciOi.x.y and Bearer secret123 done","code":"invalid_api_key"}}`,
			[]string{"[redacted]", "done"}, []string{"sk-ant", "eyJ", "secret123"}},
		{"escapes decoded, controls folded", 400, `{"error":{"message":"line1\nline2\t\"quoted\" caf\u00e9 \ud83d\ude00","code":"invalid_value"}}`,
			[]string{`line1 line2 "quoted" café 😀`}, []string{"\\n", "\n"}},
		{"long message cut", 500, `{"error":{"message":"` + long + `","type":"server_error"}}`, []string{"…"}, nil},
		{"blob word replaced", 400, `{"error":{"message":"bad data ` + strings.Repeat("A", 500) + ` here","code":"invalid_value"}}`,
			[]string{"bad data […] here"}, []string{"AAAA"}},
		{"html page not quoted", 502, "<html><body>secret stuff</body></html>", []string{"502 Bad Gateway"}, []string{"secret"}},
		{"plain text quoted", 503, "upstream connect error or disconnect/reset before headers", []string{"— upstream connect error"}, nil},
		{"identifier sanitized", 400, `{"error":{"code":"weird\u0001code with spaces"}}`, []string{"400 weird"}, []string{"\u0001"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(Lookup("openai"), Response{Status: c.status, Body: []byte(c.body)}, testNow)
			checkReason(t, v)
			if !utf8.ValidString(v.Reason) {
				t.Errorf("invalid UTF-8: %q", v.Reason)
			}
			for _, s := range c.contains {
				if !strings.Contains(v.Reason, s) {
					t.Errorf("reason %q lacks %q", v.Reason, s)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(v.Reason, s) {
					t.Errorf("reason %q has %q", v.Reason, s)
				}
			}
		})
	}
}

func TestVerdictJSON(t *testing.T) {
	v := Verdict{Class: RateLimit, Scope: ScopeCredential, RetryAfter: 3600 * time.Second, Reason: "429 x: y"}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"class":"rate_limit","scope":"credential","retry_after_ms":3600000,"reason":"429 x: y"}` {
		t.Errorf("got %s", b)
	}
	var back Verdict
	if err := json.Unmarshal(b, &back); err != nil || back != v {
		t.Errorf("round trip: %+v %v", back, err)
	}
	b, _ = json.Marshal(Verdict{Class: OK})
	if string(b) != `{"class":"ok","scope":"","retry_after_ms":0,"reason":""}` {
		t.Errorf("zero fields: %s", b)
	}
	// A refusal about the requesting tool adds one key; the four keys
	// the contract names stay as they were.
	tool := Verdict{Class: ClientError, Reason: "400 invalid_request_error: x", Tool: true}
	b, _ = json.Marshal(tool)
	if string(b) != `{"class":"client_error","scope":"","retry_after_ms":0,"reason":"400 invalid_request_error: x","tool":true}` {
		t.Errorf("tool: %s", b)
	}
	back = Verdict{}
	if err := json.Unmarshal(b, &back); err != nil || back != tool {
		t.Errorf("tool round trip: %+v %v", back, err)
	}
}

// Refusals about the requesting tool or the request's own needs never
// touch the credential, whatever status they wear (issue 24, item 11
// and 12): a 429 credits_required is not a rate limit, and the extra
// usage a third-party app is billed is not the account's billing.
func TestToolAndRequestRefusalsSpareTheCredential(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		tool   bool
	}{
		{"identity", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"This credential is only authorized for use with Claude Code and cannot be used for other API requests."}}`, true},
		{"third-party billing", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"Third-party apps now draw from your extra usage, not your plan limits."}}`, true},
		{"out of extra usage as a 429", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"You're out of extra usage. Add more at claude.ai/settings/usage and keep going."}}`, true},
		{"credits_required code alone", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited","details":{"error_code":"credits_required"}}}`, false},
		{"credits in a stream error", 0, `{"type":"error","error":{"type":"rate_limit_error","message":"Usage credits are required for long context requests."}}`, false},
	} {
		var v Verdict
		if c.status == 0 {
			v, _ = ClassifyEvent(Lookup("anthropic"), "error", []byte(c.body), testNow)
		} else {
			v = Classify(Lookup("anthropic"), Response{Status: c.status, Body: []byte(c.body)}, testNow)
		}
		if v.Class != ClientError || v.Scope != ScopeNone || v.RetryAfter != 0 || v.Tool != c.tool {
			t.Errorf("%s: %+v", c.name, v)
		}
	}
}

func TestMalformedBodies(t *testing.T) {
	for _, body := range []string{
		`{`, `{"error":`, `{"error":{"type":"rate_limit_error"`, `{"error":{"type":"rate_limit_error","message":"x`,
		`[1,2,3]`, `"just a string"`, `{"error":[{"type":"billing_error"}]}`, `{"a":` + strings.Repeat("[", 10000),
		`{"error":{"type":rate_limit_error}}`, "\x00\xff\xfe", `{"error":{"message":"\ud800 lone"}}`,
	} {
		v := Classify(Lookup("anthropic"), Response{Status: 429, Body: []byte(body)}, testNow)
		if v.Class != RateLimit {
			t.Errorf("%.40q: got %+v", body, v)
		}
		checkReason(t, v)
	}
}

// Only the head of a huge body is read; the verdict still comes from the
// status when the code lies past it.
func TestHugeBody(t *testing.T) {
	body := `{"pad":"` + strings.Repeat("x", 2*MaxBody) + `","error":{"type":"billing_error"}}`
	if v := Classify(Lookup("anthropic"), Response{Status: 429, Body: []byte(body)}, testNow); v.Class != RateLimit {
		t.Errorf("got %+v", v)
	}
}

// An in-stream error stands for the status its type has on that API; the
// proxy answers with it when it relays the refusal as an HTTP error.
func TestStreamErrorStatus(t *testing.T) {
	cases := []struct {
		name, provider, event, data string
		class                       Class
		status                      int
	}{
		{"anthropic invalid_request_error", "anthropic", "error",
			`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}`, ClientError, 400},
		{"anthropic overloaded_error", "anthropic", "error",
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Capacity, 529},
		{"anthropic rate_limit_error", "anthropic", "error",
			`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit."}}`, RateLimit, 429},
		{"anthropic api_error", "anthropic", "error",
			`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, Transient, 500},
		{"anthropic authentication_error", "anthropic", "error",
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, AuthInvalid, 401},
		{"responses context_length_exceeded", "openai", "response.failed",
			`{"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}`, ClientError, 400},
		{"responses error event context_length_exceeded", "openai", "error",
			`{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":"input"}`, ClientError, 400},
		{"responses server_is_overloaded", "chatgpt", "response.failed",
			`{"type":"response.failed","response":{"error":{"code":"server_is_overloaded","message":"Our servers are currently overloaded."}}}`, Capacity, 503},
		{"responses rate_limit_exceeded", "openai", "response.failed",
			`{"type":"response.failed","response":{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 2s."}}}`, RateLimit, 429},
		{"chat completions data line", "openai", "",
			`{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"This model's maximum context length is 128000 tokens."}}`, ClientError, 400},
		{"chat completions invalid_api_key", "openai", "",
			`{"error":{"message":"Incorrect API key provided: sk-...abcd.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, AuthInvalid, 401},
		{"responses token_expired", "chatgpt", "response.failed",
			`{"type":"response.failed","response":{"error":{"code":"token_expired","message":"Provided authentication token is expired. Please try signing in again."}}}`, AuthExpired, 401},
		{"codex_error_info server_overloaded", "chatgpt", "",
			`{"message":"Selected model is at capacity. Please try a different model.","codex_error_info":"server_overloaded"}`, Capacity, 503},
		{"unknown type is a server error", "openai", "error",
			`{"type":"error","error":{"type":"something_new","message":"what happened"}}`, Transient, 500},
		{"unreadable data is a server error", "anthropic", "error", `upstream blew up`, Transient, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, isErr := ClassifyEvent(Lookup(c.provider), c.event, []byte(c.data), testNow)
			if !isErr || v.Class != c.class || v.Status != c.status {
				t.Errorf("got %s %d (error %v), want %s %d: %s", v.Class, v.Status, isErr, c.class, c.status, v.Reason)
			}
		})
	}
	// Content is no error and stands for no status.
	if v, isErr := ClassifyEvent(Lookup("anthropic"), "message_start", []byte(`{"type":"message_start"}`), testNow); isErr || v.Status != 0 {
		t.Errorf("content: %+v %v", v, isErr)
	}
}

// ClassifyEvent reads an event whole whatever its size: a response.failed
// echoes the request's instructions and tools before its error, and the
// proxy hands over events up to 1 MiB.
func TestClassifyEventAnySize(t *testing.T) {
	for _, size := range []int{8 << 10, 100 << 10, 1 << 20} {
		pad := strings.Repeat("You are a coding agent. Keep going until the task is done. ", size/59+1)[:size]
		cases := []struct {
			name, provider, event, data string
			class                       Class
			status                      int
		}{
			{"response.failed", "chatgpt", "response.failed",
				`{"type":"response.failed","response":{"id":"resp_1","status":"failed","instructions":"` + pad + `","tools":[],` +
					`"error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`, RateLimit, 429},
			{"anthropic error event", "anthropic", "error",
				`{"type":"error","error":{"message":"` + pad + `","type":"overloaded_error"}}`, Capacity, 529},
			{"chat completions data line", "openai", "",
				`{"id":"x","echo":"` + pad + `","error":{"code":"context_length_exceeded","message":"too long"}}`, ClientError, 400},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s %d KiB", c.name, size>>10), func(t *testing.T) {
				v, isErr := ClassifyEvent(Lookup(c.provider), c.event, []byte(c.data), testNow)
				if !isErr || v.Class != c.class || v.Status != c.status {
					t.Errorf("got %s %d (error %v), want %s %d: %s", v.Class, v.Status, isErr, c.class, c.status, v.Reason)
				}
				checkReason(t, v)
			})
		}
	}
}

// Classify reads the first MaxBody bytes. JSON cut there (or anywhere) is
// judged by its status and the tables' phrases, and none of it is quoted.
func TestCutBodies(t *testing.T) {
	credit := `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`
	cases := []struct {
		name   string
		status int
		body   string
		class  Class
	}{
		{"phrase in a cut body", 400, credit[:len(credit)-40], Payment},
		{"code alone in a cut body: the status decides", 429, `{"type":"error","error":{"type":"billing_error","message":"x`, RateLimit},
		{"cut 529", 529, `{"type":"error","error":{"type":"overloaded_error"`, Capacity},
		{"phrase past MaxBody is not read", 400, `{"pad":"` + strings.Repeat("x", MaxBody) + `","error":{"message":"Your credit balance is too low"}}`, ClientError},
		{"phrase within MaxBody of a long body", 400, `{"error":{"message":"Your credit balance is too low"},"pad":"` + strings.Repeat("x", 2*MaxBody) + `"}`, Payment},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(Lookup("anthropic"), Response{Status: c.status, Body: []byte(c.body)}, testNow)
			if v.Class != c.class || v.Status != c.status {
				t.Errorf("got %s %d, want %s %d: %s", v.Class, v.Status, c.class, c.status, v.Reason)
			}
			if strings.Contains(v.Reason, "{") {
				t.Errorf("reason quotes a cut body: %s", v.Reason)
			}
			checkReason(t, v)
		})
	}
}
