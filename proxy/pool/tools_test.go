package pool

import (
	"errors"
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/api"
)

// A Claude subscription serves Claude Code; another tool's request goes to
// an API key, and with none, it is refused with the way to open the login
// (issue 24: opencode's requests took a healthy Max login away from Claude
// Code). Opted in, the login serves every tool.
func TestSubscriptionServesItsOwnTool(t *testing.T) {
	f := newFixture(t, Config{})
	f.p.Add(Credential{ID: "max", Provider: "anthropic", Label: "max", Kind: api.KindOAuth})
	f.p.Add(Credential{ID: "key", Provider: "anthropic", Label: "key", Kind: api.KindAPIKey})
	pick := func(tool string) (string, error) {
		l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m", Tool: tool})
		if err != nil {
			return "", err
		}
		l.Release()
		return l.Credential.ID, nil
	}
	for range 4 {
		if id, err := pick(api.ToolOpenCode); err != nil || id != "key" {
			t.Fatalf("opencode picked %q (%v), want the API key", id, err)
		}
	}
	seen := map[string]bool{}
	for range 4 {
		id, err := pick(api.ToolClaudeCode)
		if err != nil {
			t.Fatal(err)
		}
		seen[id] = true
	}
	if !seen["max"] {
		t.Fatalf("Claude Code never got its subscription: %v", seen)
	}
	if f.p.Explain(PickRequest{Provider: "anthropic", Model: "m", Tool: api.ToolOpenCode}) != nil {
		t.Fatal("Explain says opencode cannot be served while the key is ready")
	}

	f.p.Remove("key")
	_, err := pick(api.ToolOpenCode)
	var u *Unavailable
	if !errors.As(err, &u) || u.Barred != 1 || u.Total != 1 || u.HasNext {
		t.Fatalf("opencode with only the subscription: %v, want it barred, no time to wait for", err)
	}
	for _, want := range []string{"serves Claude Code only, not opencode", "subpool tools max all", "extra usage"} {
		if !strings.Contains(u.Error(), want) {
			t.Errorf("%q lacks %q", u.Error(), want)
		}
	}
	if u := f.p.Explain(PickRequest{Provider: "anthropic", Model: "m", Tool: api.ToolOpenCode}); u == nil || u.Barred != 1 {
		t.Fatalf("Explain for opencode = %v, want barred", u)
	}
	if id, err := pick(""); err != nil || id != "max" {
		t.Fatalf("subpool's own request picked %q (%v), want the login", id, err)
	}

	f.p.Add(Credential{ID: "max", Provider: "anthropic", Label: "max", Kind: api.KindOAuth, OtherTools: true})
	if id, err := pick(api.ToolOpenCode); err != nil || id != "max" {
		t.Fatalf("opted in: opencode picked %q (%v), want the login", id, err)
	}
	if s := f.p.Status("anthropic"); len(s) != 1 || s[0].OwnTool != api.ToolClaudeCode || !s[0].OtherTools {
		t.Fatalf("status %+v, want own tool claude-code, opted in", s)
	}
}

// A ChatGPT login and every API key serve any tool.
func TestOtherLoginsServeEveryTool(t *testing.T) {
	f := newFixture(t, Config{})
	f.p.Add(Credential{ID: "chatgpt", Provider: "openai", Label: "chatgpt", Kind: api.KindOAuth})
	l, err := f.p.Pick(PickRequest{Provider: "openai", Model: "m", Tool: api.ToolOpenCode})
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if s := f.p.Status("openai"); s[0].OwnTool != "" {
		t.Fatalf("status %+v: a ChatGPT login has no own tool", s[0])
	}
}

// Opening a login to every tool, or keeping it for its own again, is
// said in the credential_updated event's reason, which the tray reads.
func TestOpeningALoginSaysSo(t *testing.T) {
	f := newFixture(t, Config{})
	f.p.Add(Credential{ID: "max", Provider: "anthropic", Label: "max", Kind: api.KindOAuth})
	f.rec.take()
	for _, tc := range []struct {
		on   bool
		want string
	}{{true, api.ReasonOtherToolsOn}, {false, api.ReasonOtherToolsOff}} {
		f.p.Add(Credential{ID: "max", Provider: "anthropic", Label: "max", Kind: api.KindOAuth, OtherTools: tc.on})
		if ev := f.rec.take(api.EventCredentialUpdated); len(ev) != 1 || ev[0].Reason != tc.want {
			t.Fatalf("other_tools %v: events %+v, want one with reason %q", tc.on, ev, tc.want)
		}
	}
	f.p.Add(Credential{ID: "max", Provider: "anthropic", Label: "renamed", Kind: api.KindOAuth})
	if ev := f.rec.take(api.EventCredentialUpdated); len(ev) != 1 || ev[0].Reason != "" {
		t.Fatalf("a rename: %+v, want no tools reason", ev)
	}
}
