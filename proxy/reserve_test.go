package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// Issue 15, Show 3: the reserve. Two Claude logins whose windows the sim
// reports; the pool learns them as the app's poller does (one GET of the
// usage endpoint each), then requests flow.

// logins adds Claude subscriptions whose secret is their id, each at the
// given 5h use, and lets the pool read their usage endpoint once. They are
// opened to every tool: the test client is no Claude Code, and the tool
// rule has tests of its own (tools_test.go).
func (e *env) logins(used map[string]float64, ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		e.auth.secrets[id] = id
		e.pool.Add(pool.Credential{ID: id, Provider: "anthropic", Label: "Claude " + id, Kind: api.KindOAuth, OtherTools: true})
		e.up.SetUtilization(id, used[id], 0.2)
		req, _ := http.NewRequest(http.MethodGet, e.up.URL()+"/api/oauth/usage", nil)
		req.Header.Set("Authorization", "Bearer "+id)
		req.Header.Set("anthropic-beta", "oauth-2025-04-20")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		q, err := classify.ReadClaudeUsage(b, e.clk.Now())
		if err != nil {
			e.t.Fatal(err)
		}
		e.pool.SetQuota(id, q)
	}
}

func (e *env) messageCalls() []string {
	var out []string
	for _, r := range e.up.Requests() {
		if r.Path == "/v1/messages" {
			out = append(out, r.Credential)
		}
	}
	return out
}

func TestReserveSendsAllToTheLoginWithHeadroom(t *testing.T) {
	e := newEnv(t, false)
	e.pool.SetUsage(pool.UsageConfig{Reserve: 10})
	e.logins(map[string]float64{"a": 0.91, "b": 0.40}, "a", "b")
	for i := range 6 {
		resp, body := e.post("/v1/messages", msgBody)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("x-subpool-credential") != "b" {
			t.Fatalf("request %d: %d on %q: %s", i, resp.StatusCode, resp.Header.Get("x-subpool-credential"), body)
		}
	}
	if seen := e.messageCalls(); len(seen) != 6 || strings.Contains(strings.Join(seen, ","), "a") {
		t.Fatalf("upstream calls %v", seen)
	}
}

func TestReserveRefusesWhenEveryLoginIsHeld(t *testing.T) {
	e := newEnv(t, false)
	e.pool.SetUsage(pool.UsageConfig{Reserve: 10})
	e.logins(map[string]float64{"a": 0.91, "b": 0.95}, "a", "b")
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "18000" {
		t.Fatalf("retry-after %q, want the 5h window's reset (18000 s)", ra)
	}
	var eb struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Type != "error" || eb.Error.Type != "rate_limit_error" {
		t.Fatalf("not the Anthropic shape: %s", body)
	}
	for _, want := range []string{"reserve", "10%", "5h window", "frees in 5h"} {
		if !strings.Contains(eb.Error.Message, want) {
			t.Errorf("message %q lacks %q", eb.Error.Message, want)
		}
	}
	if n := len(e.messageCalls()); n != 0 {
		t.Fatalf("%d upstream calls, want 0", n)
	}
}

// A reserve refusal falls back as a cooldown does.
func TestReserveFallsBack(t *testing.T) {
	e := newEnv(t, false, withLadder(t, "[fallback]\nenabled = true\n"))
	e.pool.SetUsage(pool.UsageConfig{Reserve: 10})
	e.logins(map[string]float64{"a": 0.95}, "a")
	e.key("openai", "key-o")
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("x-subpool-fallback") == "" {
		t.Fatalf("%d fallback %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-fallback"), body)
	}
	if n := len(e.messageCalls()); n != 0 {
		t.Fatalf("the held login was called %d times", n)
	}
}
