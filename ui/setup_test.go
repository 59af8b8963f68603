package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/api"
)

// The Add menu offers `subpool setup TOOL`: the change is shown first, and
// only "Write" writes it; the status line then says what was done.
func TestSetUpAToolFromTheAddMenu(t *testing.T) {
	type setUpCall struct {
		tool string
		dry  bool
	}
	calls := make(chan setUpCall, 4)
	h := newHarness(t, func(o *Options) {
		o.SetUpTool = func(tool string, dry bool) (string, error) {
			calls <- setUpCall{tool, dry}
			if dry {
				return "~/.codex/config.toml\n+ model_provider = \"subpool\"\n", nil
			}
			return "wrote ~/.codex/config.toml\ncodex now talks to subpool\n", nil
		}
	})
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	test.Tap(h.u.panel.add)
	findMenuItem(t, h.u.win.Canvas().Overlays().Top(), "Set up a tool")
	h.u.win.Canvas().Overlays().Top().Hide()

	h.u.panel.setUpTool("codex", "Codex CLI")
	h.runUI()
	if c := <-calls; c != (setUpCall{"codex", true}) {
		t.Fatalf("first call %+v, want the dry run", c)
	}
	d := h.u.win.Canvas().Overlays().Top()
	if d == nil {
		t.Fatal("no dialog shows the change")
	}
	shown := false
	for _, l := range findAll[*widget.Label](d) {
		shown = shown || strings.Contains(l.Text, `+ model_provider = "subpool"`)
	}
	if !shown {
		t.Fatal("the dialog does not show the change")
	}
	select {
	case c := <-calls:
		t.Fatalf("wrote before Write was tapped: %+v", c)
	default:
	}
	test.Tap(findButton(t, d, "Write"))
	h.runUI()
	if c := <-calls; c != (setUpCall{"codex", false}) {
		t.Fatalf("second call %+v, want the write", c)
	}
	if got := h.u.panel.status.Text; got != "codex now talks to subpool" {
		t.Errorf("status %q", got)
	}
}

// About subpool, from the tray menu, shows this build's version.
func TestAboutShowsTheBuild(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.About = func() string { return "subpool v1.2.3\ncommit  abc123\n" }
	})
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	var about *fyne.MenuItem
	for _, it := range h.tray.menu.Items {
		if it.Label == "About subpool…" {
			about = it
		}
	}
	if about == nil {
		t.Fatalf("no About in the tray menu:\n%s", menuLabels(h.tray.menu))
	}
	about.Action()
	shown := false
	for _, l := range findAll[*widget.Label](h.u.win.Canvas().Overlays().Top()) {
		shown = shown || strings.Contains(l.Text, "subpool v1.2.3")
	}
	if !shown {
		t.Error("About does not show the version")
	}
}
