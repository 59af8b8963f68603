package ui

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/api"
)

// A Claude login's row says it serves Claude Code only and offers "Let
// other tools use this login"; ticking it first says what Anthropic bills,
// and only "Let them" calls the proxy. The check then follows the proxy's
// credential_updated. Unticking closes the login without a question; a
// ChatGPT login serves all tools and has no switch.
func TestLetOtherToolsUseALogin(t *testing.T) {
	h := newHarness(t, nil)
	s := quotaStatus()
	s.Providers[0].Credentials[0].OwnTool = api.ToolClaudeCode
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})

	if r := h.row("openai", "o1"); r.tools.Visible() || r.serves.Text != "Serves all tools" {
		t.Errorf("a ChatGPT login: switch shown %v, %q", r.tools.Visible(), r.serves.Text)
	}
	r := h.row("anthropic", "c1")
	if !r.tools.Visible() || r.tools.Disabled() || r.tools.Checked || r.tools.Text != "Let other tools use this login" {
		t.Fatalf("the switch: visible %v disabled %v checked %v %q", r.tools.Visible(), r.tools.Disabled(), r.tools.Checked, r.tools.Text)
	}
	if r.serves.Text != "Serves Claude Code only" {
		t.Errorf("serves %q", r.serves.Text)
	}

	// Cancel: no call, the check goes back.
	test.Tap(r.tools)
	warn := h.u.win.Canvas().Overlays().Top()
	if !hasText(warn, "extra usage") {
		t.Fatal("no word of extra usage before opening a Claude login")
	}
	test.Tap(findButton(t, warn, "Cancel"))
	if r.tools.Checked {
		t.Error("cancelled, yet checked")
	}
	select {
	case c := <-h.backend.calls:
		t.Fatalf("cancelled, yet called %+v", c)
	default:
	}

	// Let them.
	test.Tap(r.tools)
	test.Tap(findButton(t, h.u.win.Canvas().Overlays().Top(), "Let them"))
	if c := h.nextCall(); c.method != "SetOtherTools" || c.args != "c1 true" {
		t.Fatalf("backend got %+v", c)
	}
	h.runUI()
	if got := h.u.panel.status.Text; got != "Claude Max now serves every tool." {
		t.Errorf("status %q", got)
	}
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", Reason: api.ReasonOtherToolsOn})
	if !r.tools.Checked || r.serves.Text != "Serves all tools (opted in)" {
		t.Errorf("after the event: checked %v, %q", r.tools.Checked, r.serves.Text)
	}

	// Close it again: no question.
	test.Tap(r.tools)
	if c := h.nextCall(); c.method != "SetOtherTools" || c.args != "c1 false" {
		t.Fatalf("backend got %+v", c)
	}
	h.runUI()
	if got := h.u.panel.status.Text; got != "Claude Max serves Claude Code only again." {
		t.Errorf("status %q", got)
	}
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", Reason: api.ReasonOtherToolsOff})
	if r.tools.Checked || r.serves.Text != "Serves Claude Code only" {
		t.Errorf("closed: checked %v, %q", r.tools.Checked, r.serves.Text)
	}

	// A refused call: the error is said and the check goes back.
	h.backend.toolsErr = errors.New("subpool proxy answered 500")
	test.Tap(r.tools)
	test.Tap(findButton(t, h.u.win.Canvas().Overlays().Top(), "Let them"))
	h.nextCall()
	h.runUI()
	h.runUI()
	if r.tools.Checked || !strings.Contains(h.u.panel.status.Text, "could not change which tools Claude Max serves") {
		t.Errorf("refused: checked %v, status %q", r.tools.Checked, h.u.panel.status.Text)
	}
}

func hasText(o fyne.CanvasObject, s string) bool {
	for _, l := range findAll[*widget.Label](o) {
		if strings.Contains(l.Text, s) {
			return true
		}
	}
	for _, l := range findAll[*lineLabel](o) {
		if strings.Contains(l.Text, s) {
			return true
		}
	}
	return false
}
