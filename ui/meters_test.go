package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/api"
)

// quotaStatus: a Claude login with its weekly window binding, and a Codex
// login whose 5h window is almost spent.
func quotaStatus() *api.Status {
	return &api.Status{
		Listen: "127.0.0.1:8787",
		Now:    t0,
		Providers: []api.ProviderStatus{
			{Name: "anthropic", Credentials: []api.CredentialStatus{
				{ID: "c1", Provider: "anthropic", Label: "Claude Max", Kind: api.KindOAuth, State: api.StateReady,
					Usage: &api.Utilization{Windows: []api.Window{
						{Name: "5h", Used: 0.42, ResetsAt: until(2*time.Hour + 13*time.Minute)},
						{Name: "7d", Used: 0.72, ResetsAt: until(26 * time.Hour), Binding: true},
					}}},
			}},
			{Name: "openai", Credentials: []api.CredentialStatus{
				{ID: "o1", Provider: "openai", Label: "ChatGPT Pro", Kind: api.KindOAuth, State: api.StateReady,
					Usage: &api.Utilization{Windows: []api.Window{
						{Name: "5h", Used: 0.95, ResetsAt: until(40 * time.Minute), Binding: true},
						{Name: "7d", Used: 0.30, ResetsAt: until(100 * time.Hour)},
					}}},
			}},
		},
	}
}

// barColor is the theme colour the bar is filled with.
func barColor(m *meter) string {
	fill, _ := levelColors(m.bar.level)
	switch fill {
	case theme.ColorNameSuccess, theme.ColorNameWarning, theme.ColorNameError:
		return string(fill)
	}
	return "other"
}

func TestRowShowsOneBarPerWindow(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaStatus()})
	r := h.row("anthropic", "c1")
	if !r.meters.Visible() || len(r.bars) != 2 || len(r.meters.Objects) != 4 {
		t.Fatalf("meters visible %v, %d bars, %d objects", r.meters.Visible(), len(r.bars), len(r.meters.Objects))
	}
	for i, want := range []struct{ name, text, color string }{
		{"5h", "42% · resets in 2h 13m", "success"},
		{bindingMark + "7d", "72% · resets in 1d 2h", "warning"},
	} {
		b := r.bars[i]
		if b.name.Text != want.name || b.bar.text != want.text || barColor(b) != want.color {
			t.Errorf("bar %d: name %q text %q colour %s, want %+v", i, b.name.Text, b.bar.text, barColor(b), want)
		}
	}
	if o := h.row("openai", "o1").bars[0]; barColor(o) != "error" || o.bar.value != 0.95 {
		t.Errorf("95%% bar: colour %s value %v", barColor(o), o.bar.value)
	}

	// The windows move: the same bars follow, a third window adds one.
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.91, ResetsAt: until(2*time.Hour + 13*time.Minute), Binding: true},
		{Name: "7d", Used: 0.73, ResetsAt: until(26 * time.Hour)},
		{Name: "7d_sonnet", Used: 0.10, ResetsAt: until(26 * time.Hour)},
	}})
	if len(r.bars) != 3 || r.bars[0].bar.value != 0.91 || barColor(r.bars[0]) != "error" || r.bars[2].name.Text != "7d sonnet" {
		t.Errorf("after usage_updated: %d bars, first %v %s", len(r.bars), r.bars[0].bar.value, barColor(r.bars[0]))
	}
	test.AssertRendersToMarkup(t, "panel_meters.xml", h.u.win.Canvas())
}

func TestBindingWindowIsEmphasised(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaStatus()})
	bars := h.row("anthropic", "c1").bars
	five, week := bars[0].name, bars[1].name
	if five.TextStyle.Bold || strings.HasPrefix(five.Text, bindingMark) {
		t.Errorf("5h, not binding: bold %v %q", five.TextStyle.Bold, five.Text)
	}
	if !week.TextStyle.Bold || !strings.HasPrefix(week.Text, bindingMark) {
		t.Errorf("7d, binding: bold %v %q", week.TextStyle.Bold, week.Text)
	}
	// The binding window moves to 5h: the emphasis follows it.
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.95, ResetsAt: until(time.Hour), Binding: true},
		{Name: "7d", Used: 0.73, ResetsAt: until(26 * time.Hour)},
	}})
	if !five.TextStyle.Bold || week.TextStyle.Bold || five.Text != bindingMark+"5h" || week.Text != "7d" {
		t.Errorf("after the switch: 5h %q bold %v, 7d %q bold %v", five.Text, five.TextStyle.Bold, week.Text, week.TextStyle.Bold)
	}
}

func TestTrayMenuLinePerSubscription(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaStatus()})
	got := menuLabels(h.tray.menu)
	for _, want := range []string{"Claude Max — 7d 72% · resets Mon 14:04", "ChatGPT Pro — 5h 95% · resets 12:44"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the menu:\n%s", want, got)
		}
	}
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.72, ResetsAt: until(2*time.Hour + 16*time.Minute), Binding: true},
	}})
	if got := menuLabels(h.tray.menu); !strings.Contains(got, "Claude Max — 5h 72% · resets 14:20") {
		t.Errorf("after usage_updated:\n%s", got)
	}
}

func TestUsageNotifications(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Notify = nil })
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaStatus()})
	warn := api.Event{Type: api.EventUsageWarning, Provider: "openai", CredentialID: "o1", Kind: api.UsageWarnAt,
		Window: "5h", Used: 0.95, Reason: "the 5h window passed 90%", Time: t0}
	test.AssertNotificationSent(t, fyne.NewNotification("ChatGPT Pro: 5h window at 95%",
		"It resets at 12:44 (in 40m)."), func() { h.u.handle(warn) })
	// One per window: the same crossing again says nothing.
	test.AssertNotificationSent(t, nil, func() { h.u.handle(warn) })

	back := api.Event{Type: api.EventUsageWarning, Provider: "openai", CredentialID: "o1", Kind: api.UsageBack,
		Window: "5h", Reason: "", Time: t0}
	test.AssertNotificationSent(t, fyne.NewNotification("ChatGPT Pro is back — 5h window reset",
		"Its 5h window has room again, so requests go to it again."), func() { h.u.handle(back) })
}

// With nothing counting down but a window's reset on screen, the render
// loop redraws once a minute, on the fake clock, so "resets in" stays true.
func TestRenderLoopRedrawsResetsEveryMinute(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.u.goSafe("render", func() { h.u.renderLoop(ctx) })
	h.runUI()
	h.u.handle(api.Event{Type: api.EventSnapshot, Time: t0, Snapshot: quotaStatus()})
	waitArmed(t, h.clk)
	h.clk.Advance(redrawGap)
	h.runUI()
	bar := h.row("anthropic", "c1").bars[0]
	if got := bar.bar.text; got != "42% · resets in 2h 13m" {
		t.Fatalf("first draw: %q", got)
	}
	waitArmed(t, h.clk) // holding off after the draw...
	h.clk.Advance(redrawGap)
	waitArmed(t, h.clk)        // ...then waiting for the minute
	h.clk.Advance(time.Second) // a second is not a minute: no redraw
	if len(h.queue) != 0 {
		t.Fatal("redrew within the minute with nothing counting down")
	}
	h.clk.Advance(time.Minute - redrawGap - time.Second)
	h.runUI()
	if got := bar.bar.text; got != "42% · resets in 2h 12m" {
		t.Errorf("a minute on: %q", got)
	}
}

// A subscription's row sets its reserve from the panel, as `subpool
// reserve` does; an API key's row has no such button.
func TestReserveFromThePanel(t *testing.T) {
	h := newHarness(t, nil)
	s := quotaStatus()
	s.Providers[0].Credentials[0].Reserve = 10
	s.Providers[1].Credentials = append(s.Providers[1].Credentials,
		api.CredentialStatus{ID: "k1", Provider: "openai", Label: "openai-key", Kind: api.KindAPIKey, State: api.StateReady})
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	if menuHas(h.openRowMenu(h.row("openai", "k1")), "Reserve…") {
		t.Error("an API key offers a reserve")
	}
	h.closeOverlay()
	r := h.row("anthropic", "c1")
	if r.detail.Text != "subscription · 10% reserve" {
		t.Errorf("detail %q", r.detail.Text)
	}
	test.Tap(findMenuItem(t, h.openRowMenu(r), "Reserve…"))
	form := h.u.win.Canvas().Overlays().Top()
	sels := findAll[*widget.Select](form)
	if len(sels) != 1 || sels[0].Selected != "10%" {
		t.Fatalf("the form's choice: %d selects, %+v", len(sels), sels)
	}
	sels[0].SetSelected("15%")
	test.Tap(findButton(t, form, "Set"))
	if c := h.nextCall(); c.method != "Reserve" || c.args != "c1 15" {
		t.Errorf("backend got %+v", c)
	}
	h.runUI()
	if got := h.u.panel.status.Text; got != "Reserve of Claude Max: 15%." {
		t.Errorf("status %q", got)
	}

	// Back to the configured reserve: a negative percent, as the CLI's
	// `default`.
	test.Tap(findMenuItem(t, h.openRowMenu(r), "Reserve…"))
	form = h.u.win.Canvas().Overlays().Top()
	findAll[*widget.Select](form)[0].SetSelected("As configured ([usage] reserve)")
	test.Tap(findButton(t, form, "Set"))
	if c := h.nextCall(); c.method != "Reserve" || c.args != "c1 -1" {
		t.Errorf("backend got %+v", c)
	}
	h.runUI()
}
