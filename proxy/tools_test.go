package proxy

import (
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/pool"
)

const (
	uaClaudeCode = "claude-cli/2.1.197 (external, cli)"
	uaOpenCode   = "opencode/1.18.33 ai-sdk/provider-utils/3.0.0 runtime/bun/1.3.0"
)

// A Claude subscription serves Claude Code only: opencode's requests go to
// the API key, Claude Code's may use the login (issue 24: one opencode
// request billed as extra usage took a healthy Max login away from Claude
// Code). With the key gone, opencode is refused at once, told how to open
// the login, and the login is never sent its request.
func TestClaudeSubscriptionServesClaudeCode(t *testing.T) {
	e := newEnv(t, false)
	e.auth.secrets["max"] = "max"
	e.pool.Add(pool.Credential{ID: "max", Provider: "anthropic", Label: "Max", Kind: api.KindOAuth})
	e.key("anthropic", "key-a")
	for range 3 {
		resp, body := e.post("/v1/messages", msgBody, "User-Agent", uaOpenCode)
		if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "key-a" {
			t.Fatalf("opencode: %d on %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-credential"), body)
		}
	}
	served := map[string]bool{}
	for range 4 {
		resp, body := e.post("/v1/messages", msgBody, "User-Agent", uaClaudeCode)
		if resp.StatusCode != 200 {
			t.Fatalf("Claude Code: %d %s", resp.StatusCode, body)
		}
		served[resp.Header.Get("x-subpool-credential")] = true
	}
	if !served["max"] {
		t.Fatalf("Claude Code was never served by its subscription: %v", served)
	}
	calls := e.up.Calls("max")

	if err := e.pool.Remove("key-a"); err != nil {
		t.Fatal(err)
	}
	resp, body := e.post("/v1/messages", msgBody, "User-Agent", uaOpenCode)
	if resp.StatusCode != 503 || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("opencode with only the login: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	for _, want := range []string{"serves Claude Code only, not opencode", "subpool tools max all"} {
		if !strings.Contains(body, want) {
			t.Errorf("message %s lacks %q", body, want)
		}
	}
	if n := e.up.Calls("max"); n != calls {
		t.Fatalf("the login got %d of opencode's requests", n-calls)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if last := fin[len(fin)-1]; last.ClientApp != api.ToolOpenCode {
		t.Fatalf("request_finished names %q, want opencode", last.ClientApp)
	}
}

// Opted in by the person, the login serves every tool.
func TestOptedInSubscriptionServesEveryTool(t *testing.T) {
	e := newEnv(t, false)
	e.auth.secrets["max"] = "max"
	e.pool.Add(pool.Credential{ID: "max", Provider: "anthropic", Label: "Max", Kind: api.KindOAuth, OtherTools: true})
	resp, body := e.post("/v1/messages", msgBody, "User-Agent", uaOpenCode)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "max" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// A login opted in for other tools that refuses one of them (Anthropic's
// "Third-party apps now draw from your extra usage" 400) is neither cooled
// nor parked: the request goes to the API key, the tool is kept off the
// login for a while, and Claude Code goes on using it (issue 24: the
// extra-usage 400 parked a healthy Max login as payment).
func TestToolRefusalKeepsTheLoginForOthers(t *testing.T) {
	e := newEnv(t, false)
	e.auth.secrets["max"] = "max"
	e.pool.Add(pool.Credential{ID: "max", Provider: "anthropic", Label: "Max", Kind: api.KindOAuth, OtherTools: true})
	e.key("anthropic", "key-a")
	e.up.Always("max", sim.Step{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Third-party apps now draw from your extra usage, not your plan limits. We've added a $20 credit to get you started. Claim it at claude.ai/settings/usage and keep going."},"request_id":"req_011CZqpMLV2mFDafSPRNAc8Y"}`})
	// Affinity-free requests alternate: send until the login was asked.
	for i := 0; e.up.Calls("max") == 0; i++ {
		if i == 4 {
			t.Fatal("the opted-in login was never asked")
		}
		resp, body := e.post("/v1/messages", msgBody, "User-Agent", uaOpenCode)
		if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "key-a" {
			t.Fatalf("opencode: %d on %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-credential"), body)
		}
	}
	if s := e.state("max"); s.State != api.StateReady || len(s.Cooldowns) != 0 || len(s.Parks) != 0 {
		t.Fatalf("login after refusing opencode: %+v, want ready", s)
	}
	calls := e.up.Calls("max")
	for range 3 {
		if resp, _ := e.post("/v1/messages", msgBody, "User-Agent", uaOpenCode); resp.Header.Get("x-subpool-credential") != "key-a" {
			t.Fatal("opencode sent to the login again")
		}
	}
	if e.up.Calls("max") != calls {
		t.Fatal("the login was asked for opencode again while it is kept off")
	}
	// Claude Code is served by the login as before (its upstream script
	// refuses everyone here, so a 400 relayed from it shows it was asked).
	e.up.Always("max", sim.Step{})
	served := false
	for range 4 {
		if resp, _ := e.post("/v1/messages", msgBody, "User-Agent", uaClaudeCode); resp.Header.Get("x-subpool-credential") == "max" {
			served = true
		}
	}
	if !served {
		t.Fatal("Claude Code lost its login over opencode's refusal")
	}
}
