package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/subpool/subpool/proxy/api"
)

// geminiStatus: a Google login with its day on two per-model meters, and
// a Gemini API key held to a pace the pool learned from bare 429s.
func geminiStatus() *api.Status {
	return &api.Status{Listen: "127.0.0.1:8787", Now: t0, Providers: []api.ProviderStatus{
		{Name: "google", Wire: "gemini", Credentials: []api.CredentialStatus{
			{ID: "g1", Provider: "google", Label: "google-ai-pro", Kind: api.KindOAuth, State: api.StateReady, OwnTool: api.ToolGeminiCLI,
				Usage: &api.Utilization{Windows: []api.Window{
					{Name: "1d_gemini-2.5-pro", Used: 0.09, ResetsAt: until(20 * time.Hour)},
					{Name: "1d_gemini-2.5-flash", Used: 0.39, ResetsAt: until(20 * time.Hour), Binding: true},
				}},
				Counters: api.Counters{Requests: 12}},
			{ID: "g2", Provider: "google", Label: "gemini-key", Kind: api.KindAPIKey, State: api.StateReady,
				Paces:    []api.Pace{{Scope: "credential", Requests: 30, WindowMS: 300_000, Next: until(40 * time.Second)}},
				Counters: api.Counters{Requests: 31, RateLimits: 1}},
		}},
	}}
}

// Gemini is a provider like the others on the panel: its card, the login
// kept for Gemini CLI with its switch, a bar per model's day, and the
// key's pace counting down on its row and in the tray menu.
func TestPanelShowsGemini(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: geminiStatus()})
	if card := h.u.panel.secs["google"].card; card.Title != "Gemini" || h.u.panel.secs["google"].summary.Text != "2 of 2 ready" {
		t.Errorf("card %q %q", card.Title, h.u.panel.secs["google"].summary.Text)
	}
	login := h.row("google", "g1")
	if login.serves.Text != "Serves Gemini CLI only" || !login.tools.Visible() || login.tools.Disabled() {
		t.Errorf("login: %q, switch visible %v disabled %v", login.serves.Text, login.tools.Visible(), login.tools.Disabled())
	}
	if !menuHas(h.openRowMenu(login), "Reserve…") {
		t.Error("a Google login offers no reserve")
	}
	h.closeOverlay()
	if len(login.bars) != 2 {
		t.Fatalf("%d bars", len(login.bars))
	}
	for i, want := range []struct{ name, text string }{
		{"1d gemini-2.5-pro", "9% · resets in 20h"},
		{bindingMark + "1d gemini-2.5-flash", "39% · resets in 20h"},
	} {
		if b := login.bars[i]; b.name.Text != want.name || b.bar.text != want.text {
			t.Errorf("bar %d: %q %q, want %+v", i, b.name.Text, b.bar.text, want)
		}
	}
	key := h.row("google", "g2")
	if key.badge.text != "ready" || !key.line.Visible() || key.line.Text != "paced · 30 per 5m · next 40s" || key.tools.Visible() {
		t.Errorf("key: badge %q line %v %q, switch %v", key.badge.text, key.line.Visible(), key.line.Text, key.tools.Visible())
	}
	if got := menuLabels(h.tray.menu); !strings.Contains(got, "gemini-key — paced · 30 per 5m · next 40s") ||
		!strings.Contains(got, "google-ai-pro — 1d gemini-2.5-flash 39% · resets 08:04") {
		t.Errorf("menu:\n%s", got)
	}
	test.AssertRendersToMarkup(t, "panel_gemini.xml", h.u.win.Canvas())

	h.clk.Advance(40 * time.Second)
	h.u.redraw()
	if key.line.Text != "paced · 30 per 5m" {
		t.Errorf("at its next time: %q", key.line.Text)
	}
}

// pace_changed brings a pace to the panel and takes it away, with no
// read of status: the event stream is the one source.
func TestPaceChangedReachesThePanel(t *testing.T) {
	h := newHarness(t, nil)
	st := geminiStatus()
	paces := st.Providers[0].Credentials[1].Paces
	st.Providers[0].Credentials[1].Paces = nil
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: st})
	h.u.redraw()
	if r := h.row("google", "g2"); r.line.Visible() {
		t.Fatalf("before any pace: %q", r.line.Text)
	}

	h.send(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2", Paces: paces})
	h.u.redraw()
	if got := h.row("google", "g2").line.Text; got != "paced · 30 per 5m · next 40s" {
		t.Fatalf("after pace_changed: %q", got)
	}
	h.send(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2"})
	h.u.redraw()
	if r := h.row("google", "g2"); r.line.Visible() {
		t.Errorf("the forgotten pace still shows: %q", r.line.Text)
	}
	select {
	case c := <-h.backend.calls:
		t.Errorf("a backend call: %+v", c)
	default:
	}
}

// The screenshot's panel opens scrolled to the Gemini card, below Claude's
// and ChatGPT's, and follows it as the cards above grow, until the person
// scrolls: updates then leave the scroll where they put it.
func TestPanelScrollsToItsSection(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Section = "google" })
	st := snapshot()
	st.Providers = append(st.Providers, geminiStatus().Providers...)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: st})
	p := h.u.panel
	card := p.secs["google"].card
	atCard := func() {
		t.Helper()
		if card.Position().Y == 0 {
			t.Fatal("the Gemini card was not laid out below the others")
		}
		// The card's top, or as far down as the scroll goes.
		want := min(card.Position().Y, p.sections.Size().Height-p.scroll.Size().Height)
		if got := p.scroll.Offset.Y; got != want || got <= 0 {
			t.Fatalf("scrolled to %v, want %v", got, want)
		}
	}
	atCard()
	before := card.Position().Y
	h.send(api.Event{Type: api.EventCredentialAdded, Provider: "anthropic", CredentialID: "c9", Label: "claude-team", Kind: api.KindOAuth})
	if card.Position().Y <= before {
		t.Fatalf("a new Claude row did not push the Gemini card down: %v, then %v", before, card.Position().Y)
	}
	atCard()

	// A Claude row shrinks (its cooldown ends), the scroll pulls its offset
	// back, and the panel still follows the card.
	h.send(api.Event{Type: api.EventCredentialRemoved, Provider: "anthropic", CredentialID: "c9"})
	atCard()

	p.scroll.ScrollToTop()
	h.send(coolC1())
	if p.scroll.Offset.Y != 0 {
		t.Errorf("after the person scrolled, an update scrolled again, to %v", p.scroll.Offset.Y)
	}
}

func TestWindowSizeOption(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Size = fyne.NewSize(560, 980) })
	if got := h.u.win.Canvas().Size(); got != fyne.NewSize(560, 980) {
		t.Errorf("window %v", got)
	}
	if got := newHarness(t, nil).u.win.Canvas().Size(); got != fyne.NewSize(560, 720) {
		t.Errorf("default window %v", got)
	}
}
