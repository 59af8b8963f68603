package proxy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/pool"
)

// Final answers the clients act on (issue 43).

// A pool that only ever answers 429, with no time in it, ended each
// request with "502 gave up after 8 upstream attempts; last: 429" and
// x-should-retry: false: the opposite of what happened. It is a 429 in
// the provider's shape with the earliest time the pool knows.
func TestAttemptsSpentOnRateLimitsAreA429(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	e.up.Always("key-a", sim.RateLimited("anthropic", 0))
	e.up.Always("key-b", sim.RateLimited("anthropic", 0))
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 429 || !strings.Contains(r.body, `"type":"rate_limit_error"`) || !strings.Contains(r.body, "retry.max_attempts") {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	if s, err := strconv.Atoi(r.resp.Header.Get("Retry-After")); err != nil || s <= 0 {
		t.Fatalf("Retry-After %q: the pool knows when its cooldowns end", r.resp.Header.Get("Retry-After"))
	}
	if r.resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("x-should-retry %q: a retry would spend as many attempts again", r.resp.Header.Get("X-Should-Retry"))
	}
	if n := len(e.up.Requests()); n != 8 {
		t.Fatalf("%d upstream calls, want the 8 of retry.max_attempts", n)
	}
}

// On a pool of ChatGPT logins the same end is Codex's own
// usage_limit_reached with resets_at: Codex shows the time and stops,
// where any other 429 it shows as "exceeded retry limit" without the body.
func TestChatGPTPoolSpentIsUsageLimitReached(t *testing.T) {
	e := newEnv(t, false)
	for _, id := range []string{"plus-1", "plus-2"} {
		e.auth.secrets[id] = id
		e.pool.Add(pool.Credential{ID: id, Provider: "openai", Label: id, Kind: api.KindOAuth})
		e.up.Always(id, sim.RateLimited("openai", 0))
	}
	r := e.pump(e.async(context.Background(), "/v1/responses", `{"model":"gpt-5","input":"hi"}`))
	var v struct {
		Error struct {
			Type     string `json:"type"`
			Message  string `json:"message"`
			ResetsAt int64  `json:"resets_at"`
		} `json:"error"`
	}
	if r.resp.StatusCode != 429 || json.Unmarshal([]byte(r.body), &v) != nil || v.Error.Type != "usage_limit_reached" {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	if now := e.fake.Now().Unix(); v.Error.ResetsAt <= now || v.Error.ResetsAt > now+3600 {
		t.Fatalf("resets_at %d, now %d", v.Error.ResetsAt, now)
	}
}

// Gemini CLI retries silently on "exhausted your capacity", "capacity
// exceeded" and MODEL_CAPACITY_EXHAUSTED whatever else an error says (3
// calls and 12 minutes measured); a spent overload wait quoted the last.
// Its words are gone, and the status and RetryInfo are ones it takes as
// final.
func TestGeminiFinalRefusalEndsGeminiCLIsLoop(t *testing.T) {
	e := newEnv(t, false, withGoogle, func(o *Options, _ *simOpts) { o.CapacityMax = 3 * time.Second })
	e.googleLogin("work")
	e.up.Always("ya29.sim-work", sim.GoogleNoCapacity())
	r := e.pump(e.async(context.Background(), "/v1internal:streamGenerateContent?alt=sse", caBody("gemini-2.5-pro"), geminiHeaders(true)...))
	if geminiRetried.MatchString(r.body) {
		t.Fatalf("the final refusal quotes what Gemini CLI retries on: %s", r.body)
	}
	var v struct {
		Error struct {
			Code    int
			Details []struct {
				RetryDelay string `json:"retryDelay"`
			}
		}
	}
	if json.Unmarshal([]byte(r.body), &v) != nil || r.resp.StatusCode != 503 || v.Error.Code != 503 || len(v.Error.Details) == 0 || v.Error.Details[0].RetryDelay != "301s" {
		t.Fatalf("%d %s: want 503 with a RetryInfo over 300 s", r.resp.StatusCode, r.body)
	}
}

// A final 5xx of subpool's on the Gemini wire goes out as the 503 with
// RetryInfo over 300 s that Gemini CLI stops on: it retries a 502 ten
// times, each a new request.
func TestGeminiFinal5xxIsTerminal(t *testing.T) {
	rec := httptest.NewRecorder()
	writeError(rec, "gemini", 502, "gave up after 8 upstream attempts; last: 429 MODEL_CAPACITY_EXHAUSTED", 0, noRetry)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"retryDelay":"301s"`) || geminiRetried.MatchString(rec.Body.String()) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	writeError(rec, "gemini", 502, "the upstream failed; try again", 0, mayRetry)
	if rec.Code != 502 {
		t.Fatalf("a 502 the client may retry stays one: %d", rec.Code)
	}
}

// Codex (0.171.0) retried subpool's final 503 of a spent overload wait 30
// times in 86 s, each starting the wait again, and any 429 but its own
// usage_limit_reached 5 times: for Codex those finals are a 400 it shows
// at once with the body, and usage_limit_reached.
func TestCodexFinalsEndCodexsLoop(t *testing.T) {
	codexUA := []string{"User-Agent", "codex_exec/0.171.0 (Debian 12; x86_64) dumb (codex-exec; 0.171.0)", "Authorization", "Bearer " + testClientKey}
	e := newEnv(t, false, func(o *Options, _ *simOpts) { o.CapacityMax = 3 * time.Second })
	e.key("openai", "key-o")
	e.up.Always("key-o", sim.Step{Status: 503, Body: `{"error":{"message":"Our servers are currently overloaded.","type":"server_error","param":null,"code":"server_is_overloaded"}}`})
	r := e.pump(e.async(context.Background(), "/v1/responses", `{"model":"gpt-5","input":"hi"}`, codexUA...))
	if r.resp.StatusCode != 400 || !strings.Contains(r.body, "wait.capacity_max") {
		t.Fatalf("spent overload wait for Codex: %d %s", r.resp.StatusCode, r.body)
	}
	e.up.Always("key-o", sim.RateLimited("openai", 0))
	e.key("openai", "key-p")
	e.up.Always("key-p", sim.RateLimited("openai", 0))
	r = e.pump(e.async(context.Background(), "/v1/responses", `{"model":"gpt-5","input":"hi"}`, codexUA...))
	if r.resp.StatusCode != 429 || !strings.Contains(r.body, `"type":"usage_limit_reached"`) {
		t.Fatalf("spent attempts for Codex: %d %s", r.resp.StatusCode, r.body)
	}
	// Another client of the same pool gets the plain shapes.
	r = e.pump(e.async(context.Background(), "/v1/responses", `{"model":"gpt-5","input":"hi"}`, "Authorization", "Bearer "+testClientKey))
	if r.resp.StatusCode != 429 || !strings.Contains(r.body, `"rate_limit_exceeded"`) {
		t.Fatalf("spent attempts for an SDK: %d %s", r.resp.StatusCode, r.body)
	}
}
