package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func statuses(t *testing.T, s *Server, path string, creds ...string) []int {
	t.Helper()
	body := map[string]string{"/v1/messages": messagesBody, "/v1/chat/completions": chatBody}[path]
	var out []int
	for _, c := range creds {
		status, _, _ := post(t, s, path, c, body)
		out = append(out, status)
	}
	return out
}

func TestScriptConsumedInOrderPerCredential(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyA, ServerError(429), Overloaded())
	s.Script(keyB, ServerError(500))
	s.Script(keyA, ServerError(503)) // appends
	got := statuses(t, s, "/v1/messages", keyA, keyB, keyA, keyB, keyA, keyA)
	if want := []int{429, 500, 529, 200, 503, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if s.Calls(keyA) != 4 || s.Calls(keyB) != 2 || s.Calls("other") != 0 {
		t.Errorf("calls a=%d b=%d", s.Calls(keyA), s.Calls(keyB))
	}
}

func TestScriptTimes(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyO, Step{Status: 502, Times: 3}, Step{Status: 500})
	got := statuses(t, s, "/v1/chat/completions", keyO, keyO, keyO, keyO, keyO)
	if want := []int{502, 502, 502, 500, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

func TestAlwaysUntilClearOrScript(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyA, ServerError(500))
	s.Always(keyA, Overloaded()) // replaces the queue
	if got := statuses(t, s, "/v1/messages", keyA, keyA, keyA, keyB); !slices.Equal(got, []int{529, 529, 529, 200}) {
		t.Errorf("under Always: %v", got)
	}
	s.Clear(keyA)
	if got := statuses(t, s, "/v1/messages", keyA); got[0] != 200 {
		t.Errorf("after Clear: %v", got)
	}
	s.Always(keyA, Overloaded())
	s.Script(keyA, ServerError(500))
	if got := statuses(t, s, "/v1/messages", keyA, keyA); !slices.Equal(got, []int{500, 200}) {
		t.Errorf("Script after Always: %v", got)
	}
}

// A model-scoped step waits for a request of its model; other models of
// the same credential pass.
func TestStepForOneModel(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyA, Step{Status: 429, Model: "claude-opus-4-1"}, Step{Status: 500})
	sonnet := strings.Replace(messagesBody, "claude-opus-4-1", "claude-sonnet-4-5", 1)
	var got []int
	for _, body := range []string{sonnet, messagesBody, messagesBody, sonnet} {
		status, _, _ := post(t, s, "/v1/messages", keyA, body)
		got = append(got, status)
	}
	if want := []int{500, 429, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	s.Always(keyA, Step{Status: 529, Model: "claude-opus-4-1"})
	got = got[:0]
	for _, body := range []string{sonnet, messagesBody} {
		status, _, _ := post(t, s, "/v1/messages", keyA, body)
		got = append(got, status)
	}
	if want := []int{200, 529}; !slices.Equal(got, want) {
		t.Errorf("Always for one model: %v, want %v", got, want)
	}
}

type wireError struct {
	Type  string `json:"type"`
	Error struct {
		Type            string          `json:"type"`
		Message         string          `json:"message"`
		Code            *string         `json:"code"`
		Param           json.RawMessage `json:"param"`
		ResetsAt        *int64          `json:"resets_at"`
		ResetsInSeconds *int64          `json:"resets_in_seconds"`
		PlanType        string          `json:"plan_type"`
		Details         struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// check is one assertion on a canned step's answer.
type check func(t *testing.T, h http.Header, e wireError)

// anthropicEnvelope, openaiEnvelope and wantHeader are TestCannedSteps'
// checks; servedLater is a time d after the step is served, an hour
// after it was built.
func anthropicEnvelope(typ string) check {
	return func(t *testing.T, h http.Header, e wireError) {
		if e.Type != "error" || e.Error.Type != typ || e.Error.Message == "" ||
			e.RequestID == "" || e.RequestID != h.Get("request-id") {
			t.Errorf("anthropic body %+v, request-id %q", e, h.Get("request-id"))
		}
	}
}

func openaiEnvelope(typ, code string) check {
	return func(t *testing.T, h http.Header, e wireError) {
		if e.Type != "" || e.Error.Type != typ || string(e.Error.Param) != "null" ||
			(code == "") != (e.Error.Code == nil) || (e.Error.Code != nil && *e.Error.Code != code) {
			t.Errorf("openai body %+v", e)
		}
	}
}

func wantHeader(k, v string) check {
	return func(t *testing.T, h http.Header, _ wireError) {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func servedLater(d time.Duration) time.Time { return epoch.Add(time.Hour + d) }

// cannedStepCases are the rows of TestCannedSteps.
func cannedStepCases() []cannedStepCase {
	return []cannedStepCase{
		{"anthropic 429 with hint", "/v1/messages", RateLimited("anthropic", 30*time.Second), 429, []check{
			anthropicEnvelope("rate_limit_error"),
			wantHeader("retry-after", "30"),
			wantHeader("anthropic-ratelimit-requests-remaining", "0"),
			wantHeader("anthropic-ratelimit-requests-reset", servedLater(30*time.Second).Format(time.RFC3339)),
		}},
		{"anthropic 429 bare", "/v1/messages", RateLimited("claude", 0), 429, []check{
			anthropicEnvelope("rate_limit_error"),
			wantHeader("retry-after", ""),
			wantHeader("anthropic-ratelimit-requests-reset", ""),
		}},
		{"openai 429 with hint", "/v1/chat/completions", RateLimited("openai", 1500*time.Millisecond), 429, []check{
			openaiEnvelope("requests", "rate_limit_exceeded"),
			wantHeader("retry-after", "2"),
			wantHeader("retry-after-ms", "1500"),
			wantHeader("x-ratelimit-reset-requests", "1.5s"),
			func(t *testing.T, _ http.Header, e wireError) {
				if !strings.Contains(e.Error.Message, "Please try again in 1.5s") {
					t.Errorf("message %q", e.Error.Message)
				}
			},
		}},
		{"openai 429 bare", "/v1/responses", RateLimited("codex", 0), 429, []check{
			openaiEnvelope("requests", "rate_limit_exceeded"),
			wantHeader("retry-after", ""),
			func(t *testing.T, _ http.Header, e wireError) {
				if strings.Contains(e.Error.Message, "try again in") {
					t.Errorf("bare 429 names a time: %q", e.Error.Message)
				}
			},
		}},
		{"529", "/v1/messages", Overloaded(), 529, []check{anthropicEnvelope("overloaded_error")}},
		{"anthropic 500", "/v1/messages", ServerError(500), 500, []check{anthropicEnvelope("api_error")}},
		{"anthropic 402", "/v1/messages", ServerError(402), 402, []check{anthropicEnvelope("billing_error")}},
		{"openai 503", "/v1/chat/completions", ServerError(503), 503, []check{openaiEnvelope("server_error", "")}},
		{"codex usage limit", "/backend-api/codex/responses", UsageLimitReached(90 * time.Minute), 429, []check{
			func(t *testing.T, _ http.Header, e wireError) {
				if e.Error.Type != "usage_limit_reached" || e.Error.PlanType == "" ||
					e.Error.ResetsAt == nil || *e.Error.ResetsAt != servedLater(90*time.Minute).Unix() ||
					e.Error.ResetsInSeconds == nil || *e.Error.ResetsInSeconds != 5400 {
					t.Errorf("body %+v", e.Error)
				}
			},
		}},
		{"subscription limit", "/v1/messages", UnifiedLimitReached(2 * time.Hour), 429, []check{
			anthropicEnvelope("rate_limit_error"),
			wantHeader("anthropic-ratelimit-unified-status", "rejected"),
			wantHeader("anthropic-ratelimit-unified-reset", strconv.FormatInt(servedLater(2*time.Hour).Unix(), 10)),
			wantHeader("anthropic-ratelimit-unified-5h-reset", strconv.FormatInt(servedLater(2*time.Hour).Unix(), 10)),
			wantHeader("retry-after", ""),
		}},
		{"spend cap", "/v1/messages", SpendLimitReached(), 429, []check{
			anthropicEnvelope("rate_limit_error"),
			func(t *testing.T, _ http.Header, e wireError) {
				if e.Error.Details.ErrorCode != "enforced_spend_limit_reached" {
					t.Errorf("details %+v", e.Error.Details)
				}
			},
		}},
		{"anthropic 401", "/v1/messages", Unauthorized("anthropic"), 401, []check{anthropicEnvelope("authentication_error")}},
		{"openai 401", "/v1/responses", Unauthorized("openai"), 401, []check{openaiEnvelope("invalid_request_error", "invalid_api_key")}},
		{"anthropic expired", "/v1/messages", TokenExpired("anthropic"), 401, []check{
			anthropicEnvelope("authentication_error"),
			func(t *testing.T, _ http.Header, e wireError) {
				if !strings.Contains(e.Error.Message, "OAuth token has expired") {
					t.Errorf("message %q", e.Error.Message)
				}
			},
		}},
		{"openai expired", "/backend-api/codex/responses", TokenExpired("chatgpt"), 401, []check{openaiEnvelope("invalid_request_error", "token_expired")}},
	}
}

type cannedStepCase struct {
	name   string
	path   string
	step   Step
	status int
	checks []check
}

// Canned steps carry the real shapes, with reset times counted from when
// the answer is served on the sim's clock, not from when the Step was
// built.
func TestCannedSteps(t *testing.T) {
	for _, tc := range cannedStepCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := startFake(t, Options{})
			cred := keyO
			if providerOf(tc.path) == Anthropic {
				cred = keyA
			}
			s.Script(cred, tc.step)
			clk.Advance(time.Hour) // the step was built an hour before it is served
			body := map[string]string{"/v1/messages": messagesBody, "/v1/chat/completions": chatBody}[tc.path]
			if body == "" {
				body = responseBody
			}
			status, h, b := post(t, s, tc.path, cred, body)
			if status != tc.status || h.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, content-type %q: %s", status, h.Get("Content-Type"), b)
			}
			var e wireError
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			for _, c := range tc.checks {
				c(t, h, e)
			}
		})
	}
}

func TestUnknownProviderPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("RateLimited accepted an unknown provider")
		}
	}()
	RateLimited("mistral", 0)
}

// Hand-written steps get the same placeholders as the canned ones.
func TestRawStepPlaceholders(t *testing.T) {
	s, _ := startFake(t, Options{})
	s.Script(keyO, Step{
		Status: 418,
		Header: map[string]string{"x-reset": "{{unix+60}}", "x-when": "{{rfc3339}}", "x-keep": "{{nope}}"},
		Body:   `{"id":"{{request_id}}","at":{{unix}}}`,
	})
	status, h, b := post(t, s, "/v1/chat/completions", keyO, chatBody)
	m := decode(t, b)
	if status != 418 || str(t, m, "id") != h.Get("x-request-id") || num(t, m, "at") != epoch.Unix() {
		t.Errorf("%d %s (x-request-id %q)", status, b, h.Get("x-request-id"))
	}
	if h.Get("x-reset") != strconv.FormatInt(epoch.Unix()+60, 10) || h.Get("x-when") != epoch.Format(time.RFC3339) || h.Get("x-keep") != "{{nope}}" {
		t.Errorf("headers %v", h)
	}
}

// A short Delay still ends in the answer; Header applies to successes too.
func TestDelayedSuccessWithHeader(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyA, Step{Delay: time.Millisecond, Header: map[string]string{"x-extra": "1"}})
	status, h, b := post(t, s, "/v1/messages", keyA, messagesBody)
	if status != 200 || h.Get("x-extra") != "1" || str(t, decode(t, b), "type") != "message" {
		t.Errorf("%d %v %s", status, h, b)
	}
}
