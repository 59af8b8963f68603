package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// Every refusal subpool makes tells the client's retry loop the truth
// (issue 24): Claude Code and both SDKs retry 408, 409, 429 and every 5xx
// unless x-should-retry says otherwise, so a refusal that nothing will
// change soon carries x-should-retry: false, and one with a known time a
// retry-after.

// The only credential is a dead API key: the client gets subpool's message
// at once with x-should-retry: false, and it says to add a new key, not to
// log in (observed: a 503 with no hint left Claude Code silent for a
// minute, retrying).
func TestDeadSoleKeyIsFinal(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Always("key-a", sim.Unauthorized("anthropic"))
	for i := range 2 {
		resp, body := e.post("/v1/messages", msgBody)
		if resp.StatusCode != 503 || resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get("Retry-After") != "" {
			t.Fatalf("request %d: %d %v %s", i, resp.StatusCode, resp.Header, body)
		}
		if !strings.Contains(body, "subpool add-key anthropic") || strings.Contains(body, "log in again") {
			t.Fatalf("request %d: message %s, want it to say to add a new key", i, body)
		}
		// Claude Code replaces any error naming x-api-key with advice
		// about its own key to subpool ("Please run /login").
		if strings.Contains(strings.ToLower(body), "x-api-key") {
			t.Fatalf("request %d: message %s names x-api-key, which Claude Code hides", i, body)
		}
	}
	if n := e.up.Calls("key-a"); n != 1 {
		t.Fatalf("%d upstream calls, want 1: a parked key is not tried again", n)
	}
}

// A capacity budget spent inside a 200 stream (the overload as its first
// event) ends with the same final 503 as a spent 529: relayed as an
// overload, the client's retries would start the wait again.
func TestSpentCapacityBudgetInStreamIsFinal(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) { o.CapacityMax = 3 * time.Second })
	e.key("anthropic", "key-a")
	e.up.Always("key-a", sim.StreamOverloaded("anthropic"))
	r := e.pump(e.async(context.Background(), "/v1/messages", `{"model":"claude-sonnet-4-5","stream":true,"messages":[]}`))
	if r.resp.StatusCode != 503 || r.resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("%d %v %s", r.resp.StatusCode, r.resp.Header, r.body)
	}
	if strings.Contains(r.body, `"type":"overloaded_error"`) || !strings.Contains(r.body, "wait.capacity_max") {
		t.Fatalf("body %s: want subpool's words, without the overloaded_error type Claude Code retries on", r.body)
	}
}

// A refusal of the request itself is relayed as it came, marked so that
// no client sends it again (a 429 credits_required is retried otherwise).
func TestRelayedClientErrorIsFinal(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.Step{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`})
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 400 || resp.Header.Get("X-Should-Retry") != "false" || !strings.Contains(body, "prompt is too long") {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// A cooldown too long to wait out names its time: a 429 with retry-after
// and no x-should-retry, so the client's own rule retries then.
func TestLongCooldownNamesItsTime(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.RateLimited("anthropic", 10*time.Minute))
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-Should-Retry") != "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// subpool's own refusals of the request (the client key, the body's
// size) are final too.
func TestOwnRefusalsAreFinal(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	resp, body := e.post("/v1/messages", msgBody, "x-api-key", "wrong")
	if resp.StatusCode != 401 || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}
