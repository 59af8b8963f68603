package ui

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/subpool/subpool/proxy/api"
)

// "Log in again" opens a dialog with the address on one line and a copy
// button; the address the browser ended on, pasted, finishes the login
// through the proxy, off the UI goroutine; Close dismisses it.
func TestLoginDialog(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()}, reloginC2())
	test.Tap(h.row("anthropic", "c2").relogin)
	if c := h.nextCall(); c.method != "StartLogin" || c.args != "anthropic claude-pro" {
		t.Fatalf("backend got %+v", c)
	}
	h.runUI()
	l := h.u.panel.login
	if l == nil || !hasText(h.u.win.Canvas().Overlays().Top(), "open this address") {
		t.Fatal("no login dialog")
	}
	if l.addr.Text != "https://login.example/authorize" || l.addr.MultiLine || l.addr.Wrapping == fyne.TextWrapWord || l.addr.Wrapping == fyne.TextWrapBreak {
		t.Errorf("address %q multiline %v wrapping %v", l.addr.Text, l.addr.MultiLine, l.addr.Wrapping)
	}
	l.addr.SetText("typed over")
	if l.addr.Text != "https://login.example/authorize" {
		t.Errorf("the address was changed to %q", l.addr.Text)
	}
	test.Tap(l.copy)
	if got := h.app.Clipboard().Content(); got != "https://login.example/authorize" {
		t.Errorf("clipboard %q", got)
	}

	test.Tap(l.finish) // nothing pasted: says so, calls nothing
	if !strings.Contains(l.note.Text, "Paste the address") {
		t.Errorf("note %q", l.note.Text)
	}
	h.backend.completeErr = errors.New("this code belongs to another login attempt; start the login again")
	l.pasted.SetText(" http://localhost:54545/callback?code=abc&state=s ")
	test.Tap(l.finish)
	if c := h.nextCall(); c.method != "CompleteLogin" || c.args != "anthropic http://localhost:54545/callback?code=abc&state=s" {
		t.Fatalf("backend got %+v", c)
	}
	h.runUI()
	if !strings.Contains(l.note.Text, "another login attempt") || h.u.win.Canvas().Overlays().Top() == nil {
		t.Errorf("refused: note %q, dialog gone %v", l.note.Text, h.u.win.Canvas().Overlays().Top() == nil)
	}
	h.backend.completeErr = nil
	test.Tap(l.finish)
	h.nextCall()
	h.runUI()
	if h.u.win.Canvas().Overlays().Top() != nil || l.pasted.Text != "" {
		t.Errorf("finished: dialog still up %v, pasted %q", h.u.win.Canvas().Overlays().Top() != nil, l.pasted.Text)
	}
	if got := h.u.panel.status.Text; !strings.HasPrefix(got, "Logged in to Claude") {
		t.Errorf("status %q", got)
	}

	// Close dismisses a dialog without finishing anything.
	test.Tap(h.row("anthropic", "c2").relogin)
	h.nextCall()
	h.runUI()
	test.Tap(findButton(t, h.u.win.Canvas().Overlays().Top(), "Close"))
	if h.u.win.Canvas().Overlays().Top() != nil {
		t.Error("Close left the dialog up")
	}
}
