package view

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// googleStatus: a Google login imported from Gemini CLI, its day read as
// one window per model, and a Gemini API key.
func googleStatus() *api.Status {
	return &api.Status{Listen: "127.0.0.1:8787", Now: t0, Providers: []api.ProviderStatus{
		{Name: "google", Wire: "gemini", Credentials: []api.CredentialStatus{
			{ID: "g1", Provider: "google", Label: "google-ai-pro", Kind: api.KindOAuth, Source: "gemini-cli", State: api.StateReady,
				OwnTool: api.ToolGeminiCLI, Usage: &api.Utilization{Windows: []api.Window{
					{Name: "1d_gemini-2.5-pro", Used: 0.09, ResetsAt: at(20 * time.Hour)},
					{Name: "1d_gemini-2.5-flash", Used: 0.39, ResetsAt: at(20 * time.Hour), Binding: true},
				}}},
			{ID: "g2", Provider: "google", Label: "gemini-key", Kind: api.KindAPIKey, State: api.StateReady},
		}},
	}}
}

func TestGoogleShowsAsGemini(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: googleStatus()})
	s := h.section("google")
	if s.Title != "Gemini" || s.Summary != "2 of 2 ready" {
		t.Errorf("section %q %q", s.Title, s.Summary)
	}
	login := h.row("g1")
	if login.Serves != "Gemini CLI only" || !login.CanSetTools || login.ToolsWarning != "" ||
		login.Detail != "subscription · imported from Gemini CLI" {
		t.Errorf("login: serves %q, can set tools %v, warning %q, detail %q", login.Serves, login.CanSetTools, login.ToolsWarning, login.Detail)
	}
	if len(login.Meters) != 2 {
		t.Fatalf("meters %+v", login.Meters)
	}
	for i, want := range []struct {
		text    string
		binding bool
	}{{"1d gemini-2.5-pro 9%", false}, {"1d gemini-2.5-flash 39%", true}} {
		if m := login.Meters[i]; m.Text != want.text || m.Binding != want.binding || m.Resets != "resets in 20h" {
			t.Errorf("meter %d: %+v, want %+v", i, m, want)
		}
	}
	if login.Menu != "1d gemini-2.5-flash 39% · resets 08:04" {
		t.Errorf("menu %q", login.Menu)
	}
	if key := h.row("g2"); key.Serves != "all tools" || key.CanSetTools || key.Detail != "API key" {
		t.Errorf("key: serves %q, can set tools %v, detail %q", key.Serves, key.CanSetTools, key.Detail)
	}

	// Opened to every tool, the login says so.
	st := googleStatus()
	st.Providers[0].Credentials[0].OtherTools = true
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: st})
	if r := h.row("g1"); r.Serves != "all tools (opted in)" || !r.OtherTools {
		t.Errorf("opened: serves %q", r.Serves)
	}
}

// A Google login added by an event (before any snapshot names its tool)
// still serves Gemini CLI only, from its provider and kind.
func TestGoogleLoginAddedServesGeminiCLI(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: &api.Status{Listen: "127.0.0.1:8787"}})
	h.send(api.Event{Type: api.EventCredentialAdded, Provider: "google", CredentialID: "g3", Label: "me@gmail.com", Kind: api.KindOAuth})
	if r := h.row("g3"); r.Serves != "Gemini CLI only" || r.OwnTool != api.ToolGeminiCLI {
		t.Errorf("serves %q own tool %q", r.Serves, r.OwnTool)
	}
	if got := h.view().Sections[0].Title; got != "Gemini" {
		t.Errorf("section title %q", got)
	}
}

func TestLoginTitle(t *testing.T) {
	for p, want := range map[string]string{"anthropic": "Claude", "openai": "ChatGPT", "google": "Google", "zai": "zai"} {
		if got := LoginTitle(p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
}
