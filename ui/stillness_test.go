package ui

import (
	"fmt"
	"fyne.io/fyne/v2/test"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/ui/view"
)

// places is where every button and bar of the panel sits, by row.
func places(h *harness) map[string]fyne.Position {
	d := fyne.CurrentApp().Driver()
	out := map[string]fyne.Position{}
	for prov, s := range h.u.panel.secs {
		out[prov+" card"] = d.AbsolutePositionForObject(s.card)
		for id, r := range s.byID {
			for name, o := range map[string]fyne.CanvasObject{
				"pause": r.pause, "reset": r.reset, "more": r.more, "relogin": r.loginSlot,
				"line": r.lineSlot, "counts": r.counts, "tools": r.tools,
			} {
				out[fmt.Sprintf("%s/%s %s", prov, id, name)] = d.AbsolutePositionForObject(o)
			}
			for i, b := range r.bars {
				out[fmt.Sprintf("%s/%s bar %d", prov, id, i)] = d.AbsolutePositionForObject(b.bar)
			}
		}
	}
	return out
}

func checkPlaces(t *testing.T, before, after map[string]fyne.Position) {
	t.Helper()
	for k, p := range before {
		if after[k] != p {
			t.Errorf("%s moved from %v to %v", k, p, after[k])
		}
	}
}

// Nothing on the panel moves as states change: a row starts cooling, needs
// a login, is paused; a provider holds requests; the link drops and its
// banner appears. Buttons stay under the mouse and the window keeps its
// size (issue 42: buttons jumped 20 to 40 px, the window widened itself).
func TestRowsKeepTheirPlaces(t *testing.T) {
	h := newHarness(t, nil)
	h.u.win.Resize(fyne.NewSize(560, 2000)) // every card in view
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	before, size := places(h), h.u.win.Canvas().Size()

	h.send(coolC1(), reloginC2(),
		api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o1", State: api.StatePaused},
		api.Event{Type: api.EventWaitStarted, Provider: "anthropic", CredentialID: "c1", Kind: api.WaitSoleProvider,
			Until: until(5 * time.Minute)})
	h.u.panel.setStatus("Pause codex-plus: done — and a long outcome that needs more than one line of the panel to say what happened", false)
	if !h.u.panel.notes.Visible() {
		t.Error("the hold's note is not shown")
	}
	checkPlaces(t, before, places(h))
	h.send(api.Event{Type: view.EventOffline})
	after := places(h)
	checkPlaces(t, before, after)
	d := fyne.CurrentApp().Driver()
	if r := h.row("anthropic", "c1"); !r.countdown.Visible() || d.AbsolutePositionForObject(r.countdown) != after["anthropic/c1 line"] {
		t.Error("the countdown is not shown in the line's place")
	}
	if r := h.row("anthropic", "c2"); !r.relogin.Visible() || d.AbsolutePositionForObject(r.relogin) != after["anthropic/c2 relogin"] {
		t.Error("Log in again is not shown in its place")
	}
	if !h.u.panel.banner.Visible() {
		t.Error("the offline banner is not shown")
	}
	if got := h.u.win.Canvas().Size(); got != size {
		t.Errorf("the window went from %v to %v", size, got)
	}
	if w := h.u.win.Content().MinSize().Width; w > 560 {
		t.Errorf("the content needs %v wide, more than the 560 the window opens with", w)
	}
}

// A meter's update paints in place: no widget of the panel is given a
// theme of its own. A container.ThemeOverride refreshed per update made a
// new theme scope each time, and the painter caches the fonts of every
// scope forever (issue 42: 10 MiB/s while the panel was open).
func TestMeterRefreshMakesNoThemeScope(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaStatus()})
	for i := range 5 {
		h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
			{Name: "5h", Used: 0.5 + float64(i)/10, ResetsAt: until(2 * time.Hour), Binding: i%2 == 0},
			{Name: "7d", Used: 0.72, ResetsAt: until(26 * time.Hour)},
		}}, coolC1())
		h.clk.Advance(time.Second)
		h.u.redraw()
	}
	app := theme.Current()
	var scoped []string
	for _, o := range findAll[fyne.CanvasObject](h.u.win.Content()) {
		if _, ok := o.(*container.ThemeOverride); ok {
			scoped = append(scoped, "a ThemeOverride")
		}
		if th := theme.CurrentForWidget(o); th != app {
			scoped = append(scoped, fmt.Sprintf("%T", o))
		}
	}
	if len(scoped) > 0 {
		t.Errorf("%d objects have a theme scope of their own: %v", len(scoped), scoped[:min(5, len(scoped))])
	}
	if bars := findAll[*levelBar](h.u.win.Content()); len(bars) < 4 {
		t.Errorf("%d bars drawn", len(bars))
	}
}

// A long reason in a countdown ends in an ellipsis: it does not widen the
// window (issue 42: the window widened itself from 597 to 634 px).
func TestLongTextsDoNotWidenThePanel(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	long := "429 rate_limit_error: account rate limit exceeded for the organization on requests, input tokens and output tokens per minute"
	cool := coolC1()
	cool.Reason = long
	h.send(cool, api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", Reason: long})
	if w := h.u.win.Content().MinSize().Width; w > 560 {
		t.Errorf("the content needs %v wide", w)
	}
	bar := h.row("anthropic", "c1").countdown
	if shown := test.WidgetRenderer(bar).(*levelBarRenderer).runs.text(); !strings.HasSuffix(shown, "…") || !strings.HasPrefix(bar.text, shown[:10]) {
		t.Errorf("the countdown shows %q of %q", shown, bar.text)
	}
}
