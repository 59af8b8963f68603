package view

import (
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/api"
)

// Each row says which tools its credential serves: a Claude login Claude
// Code only until the person opens it, a ChatGPT login and an API key all
// tools. Only a login kept for its own tool offers the switch, with
// Anthropic's billing said before a Claude login is opened; the
// credential_updated reasons move it both ways, and a login added by an
// event knows its own tool from its provider.
func TestRowsSayWhichToolsTheyServe(t *testing.T) {
	h := newHarness(t)
	s := snapshot()
	s.Providers[0].Credentials[0].OwnTool = api.ToolClaudeCode
	s.Providers[0].Credentials[1].OwnTool = api.ToolClaudeCode
	s.Providers[0].Credentials[1].OtherTools = true
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})

	for _, tc := range []struct {
		id, serves string
		can, other bool
	}{
		{"c1", "Claude Code only", true, false},
		{"c2", "all tools (opted in)", true, true},
		{"o1", "all tools", false, false},
		{"o2", "all tools", false, false},
	} {
		r := h.row(tc.id)
		if r.Serves != tc.serves || r.CanSetTools != tc.can || r.OtherTools != tc.other {
			t.Errorf("%s: serves %q can %v other %v, want %q %v %v", tc.id, r.Serves, r.CanSetTools, r.OtherTools, tc.serves, tc.can, tc.other)
		}
	}
	if w := h.row("c1").ToolsWarning; !strings.Contains(w, "extra usage") || !strings.Contains(w, "Claude Code only") {
		t.Errorf("warning %q", w)
	}
	if w := h.row("o1").ToolsWarning; w != "" {
		t.Errorf("a ChatGPT login warns %q", w)
	}

	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", Reason: api.ReasonOtherToolsOn})
	if r := h.row("c1"); r.Serves != "all tools (opted in)" || !r.OtherTools || r.Reason != "" {
		t.Errorf("opened: %+v", r)
	}
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c2", Reason: api.ReasonOtherToolsOff})
	if r := h.row("c2"); r.Serves != "Claude Code only" || r.OtherTools {
		t.Errorf("closed: %+v", r)
	}

	h.send(api.Event{Type: api.EventCredentialAdded, Provider: "anthropic", CredentialID: "c3", Label: "new login", Kind: api.KindOAuth})
	if r := h.row("c3"); r.Serves != "Claude Code only" || !r.CanSetTools {
		t.Errorf("a login added by an event: %+v", r)
	}

	// Offline: nothing can be changed.
	h.send(api.Event{Type: "offline"})
	if r := h.row("c1"); r.CanSetTools || r.Serves == "" {
		t.Errorf("offline: can %v serves %q", r.CanSetTools, r.Serves)
	}
}
