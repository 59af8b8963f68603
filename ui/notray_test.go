package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Without a tray host the panel is a window: it says why there is no icon
// (until dismissed), carries the tray's menu as its own, touches no tray,
// and a close only hides it; a reopen shows it again.
func TestPanelWithoutATrayHost(t *testing.T) {
	const why = "No tray icon on this desktop. On GNOME, add the \"AppIndicator and KStatusNotifierItem Support\" extension."
	closed := 0
	reopen := make(chan struct{})
	h := newHarness(t, func(o *Options) {
		o.NoTrayHost = why
		o.Closed = func() { closed++ }
		o.Reopen = reopen
	})
	h.u.goSafe("reopen", func() { h.u.reopenLoop(t.Context()) })
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	if !h.u.panel.trayNoteBox.Visible() || h.u.panel.trayNote.Text != why {
		t.Errorf("note visible %v %q", h.u.panel.trayNoteBox.Visible(), h.u.panel.trayNote.Text)
	}
	if h.tray.menu != nil || h.tray.icon != nil || h.tray.window != nil {
		t.Error("the UI set up a tray nobody shows")
	}
	mm := h.u.win.MainMenu()
	if mm == nil || len(mm.Items) != 1 || !strings.Contains(menuLabels(mm.Items[0]), "Quit") {
		t.Fatalf("the window's menu: %+v", mm)
	}
	if !strings.Contains(menuLabels(mm.Items[0]), "127.0.0.1:8787") {
		t.Errorf("the window's menu lacks the tray's lines:\n%s", menuLabels(mm.Items[0]))
	}

	// The panel under the menu shows the credentials: the menu leaves out
	// their lines, which count down, so a tick builds no new menu bar.
	h.send(coolC1())
	mm = h.u.win.MainMenu()
	line := h.row("anthropic", "c1").line.Text
	h.clk.Advance(time.Second)
	h.u.redraw()
	if got := h.row("anthropic", "c1").line.Text; got == line {
		t.Fatalf("no tick: %q", got)
	}
	if h.u.win.MainMenu() != mm {
		t.Errorf("a countdown's tick built a new menu:\n%s", menuLabels(h.u.win.MainMenu().Items[0]))
	}

	h.u.closeWindow()
	if closed != 1 {
		t.Errorf("Closed ran %d times", closed)
	}
	reopen <- struct{}{}
	h.runUI() // the reopen's Show; the test window has no visibility to read
	h.u.panel.dismissTrayNote()
	if h.u.panel.trayNoteBox.Visible() {
		t.Error("the note stayed after its dismissal")
	}
}
