package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// quotaSnapshot: one Claude login with three windows, the weekly binding
// as the proxy marks it, and a Codex login over 100 % as Codex reports.
func quotaSnapshot() *api.Status {
	return &api.Status{
		Listen: "127.0.0.1:8787",
		Now:    t0,
		Providers: []api.ProviderStatus{
			{Name: "anthropic", Credentials: []api.CredentialStatus{
				{ID: "c1", Provider: "anthropic", Label: "Claude Max", Kind: api.KindOAuth, State: api.StateReady,
					Usage: &api.Utilization{Windows: []api.Window{
						{Name: "5h", Used: 0.72, ResetsAt: at(2*time.Hour + 13*time.Minute)},
						{Name: "7d", Used: 0.55, ResetsAt: at(50 * time.Hour)},
						{Name: "7d_sonnet", Used: 0.93, ResetsAt: at(50 * time.Hour), Binding: true},
					}}},
			}},
			{Name: "openai", Credentials: []api.CredentialStatus{
				{ID: "o1", Provider: "openai", Label: "ChatGPT Pro", Kind: api.KindOAuth, State: api.StateReady,
					Usage: &api.Utilization{Windows: []api.Window{
						{Name: "5h", Used: 1.01, ResetsAt: at(30 * time.Second)},
					}}},
				{ID: "o2", Provider: "openai", Label: "openai-key", Kind: api.KindAPIKey, State: api.StateReady,
					Usage: &api.Utilization{Windows: []api.Window{{Name: "requests", Used: 0.2, ResetsAt: at(time.Minute)}}}},
			}},
		},
	}
}

func TestMetersOnePerWindowWithTheBindingOneMarked(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	r := h.row("c1")
	want := []Meter{
		{Name: "5h", Value: 0.72, Level: LevelWarn, Text: "5h 72%", Resets: "resets in 2h 13m", ResetsAt: "14:17"},
		{Name: "7d", Value: 0.55, Level: LevelGood, Text: "7d 55%", Resets: "resets in 2d 2h", ResetsAt: "Tue 14:04"},
		{Name: "7d sonnet", Value: 0.93, Level: LevelBad, Text: "7d sonnet 93%", Resets: "resets in 2d 2h", ResetsAt: "Tue 14:04", Binding: true},
	}
	if len(r.Meters) != len(want) {
		t.Fatalf("meters %+v", r.Meters)
	}
	for i, w := range want {
		got := r.Meters[i]
		got.resetsIn = 0
		if got != w {
			t.Errorf("meter %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	if r.Line != "" {
		t.Errorf("a ready row repeats its state under the badge: %q", r.Line)
	}
	// Codex's 101 % is a full bar, not more.
	if m := h.row("o1").Meters[0]; m.Value != 1 || m.Text != "5h 100%" || m.Level != LevelBad || !m.Binding {
		t.Errorf("over-full window %+v", m)
	}
	v := h.view()
	if !v.Minutely || !v.Ticking { // o1 resets within the minute: seconds shown
		t.Errorf("minutely %v ticking %v", v.Minutely, v.Ticking)
	}
}

func TestUsageUpdatedMovesTheBarsAndAPassedResetEmptiesOne(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.81, ResetsAt: at(10 * time.Minute), Binding: true},
		{Name: "7d", Used: 0.56, ResetsAt: at(50 * time.Hour)},
	}})
	ms := h.row("c1").Meters
	if len(ms) != 2 || ms[0].Text != "5h 81%" || !ms[0].Binding || ms[1].Binding || ms[0].Resets != "resets in 10m" {
		t.Fatalf("after usage_updated: %+v", ms)
	}
	h.clk.Advance(10 * time.Minute)
	ms = h.row("c1").Meters
	if ms[0].Value != 0 || ms[0].Text != "5h 0%" || ms[0].Resets != "reset" || ms[0].Level != LevelGood {
		t.Errorf("after its reset, with no news: %+v", ms[0])
	}
	// The bar for an unknown credential is ignored, not invented.
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "nope", Windows: []api.Window{{Name: "5h", Used: 1}}})
	if got := len(h.view().Sections[0].Rows); got != 1 {
		t.Errorf("%d rows", got)
	}
}

func TestMenuLinePerSubscription(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.72, ResetsAt: at(2*time.Hour + 16*time.Minute), Binding: true},
		{Name: "7d", Used: 0.40, ResetsAt: at(50 * time.Hour)},
	}})
	var lines []string
	for _, it := range h.view().Menu(MenuOptions{}) {
		if it.Action == ActOpenPanel && it.Label != "Open panel…" {
			lines = append(lines, it.Label)
		}
	}
	want := []string{
		"Claude Max — 5h 72% · resets 14:20",
		"ChatGPT Pro — 5h 100% · resets 12:05",
		"openai-key — ready", // an API key's minute windows are noise here
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("menu lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// A subscription that is out says why, not its usage.
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "c1", Scope: "credential",
		Until: until(time.Minute, h.clk.Now()), Reason: "429 rate limit"})
	if got := h.row("c1").Menu; got != "cooling 1m · 429 rate limit" {
		t.Errorf("cooling menu line %q", got)
	}
}

func TestReserveHoldsASubscriptionBack(t *testing.T) {
	h := newHarness(t)
	s := quotaSnapshot()
	c := &s.Providers[0].Credentials[0]
	c.Reserve = 10
	c.ReservedUntil = at(2*time.Hour + 13*time.Minute)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	r := h.row("c1")
	if r.Badge != (Badge{"reserve", LevelInfo}) || r.Line != "kept for your own use: 10% reserve · frees in 2h 13m (14:17)" {
		t.Errorf("reserved row: %+v %q", r.Badge, r.Line)
	}
	if r.Menu != "7d sonnet 93% · held by the reserve until 14:17" {
		t.Errorf("menu line %q", r.Menu)
	}
	if sec := h.section("anthropic"); sec.Summary != "none ready · next in 2h13m" {
		t.Errorf("section %q", sec.Summary)
	}
	if v := h.view(); v.Tray != TrayAttention || !strings.Contains(v.Summary, "1 held by reserve") {
		t.Errorf("tray %q summary %q", v.Tray, v.Summary)
	}
	h.clk.Advance(2*time.Hour + 13*time.Minute)
	if r := h.row("c1"); r.Badge.Text != "ready" {
		t.Errorf("after the reset: %+v", r.Badge)
	}
}

func TestUsageWarningNotifiesOncePerWindow(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	warn := func(window string, used float64) []Notice {
		return h.send(api.Event{Type: api.EventUsageWarning, Provider: "anthropic", CredentialID: "c1", Label: "Claude Max",
			Kind: api.UsageWarnAt, Window: window, Used: used, Reason: "5h window past 90%"})
	}
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.91, ResetsAt: at(2*time.Hour + 13*time.Minute), Binding: true},
		{Name: "7d", Used: 0.60, ResetsAt: at(50 * time.Hour)},
	}})
	n := warn("5h", 0.91)
	want := Notice{Key: "usage/c1/5h", Title: "Claude Max: 5h window at 91%",
		Body: "It resets at 14:17 (in 2h 13m)."}
	if len(n) != 1 || n[0] != want {
		t.Fatalf("warning notices %+v", n)
	}
	if n := warn("5h", 0.93); len(n) != 0 {
		t.Errorf("the same window warned twice: %+v", n)
	}
	if n := warn("7d", 0.90); len(n) != 1 || n[0].Title != "Claude Max: 7d window at 90%" || n[0].Body != "It resets at Tue 14:04 (in 2d 2h)." {
		t.Errorf("another window: %+v", n)
	}
	// The window resets and fills again: that crossing is news.
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1", Windows: []api.Window{
		{Name: "5h", Used: 0.05, ResetsAt: at(7 * time.Hour), Binding: true},
		{Name: "7d", Used: 0.91, ResetsAt: at(50 * time.Hour)},
	}})
	if n := warn("5h", 0.92); len(n) != 1 {
		t.Errorf("after a reset: %+v", n)
	}
	if got := h.view().Events[0]; got != "12:04:31 Claude Max: 5h window at 92%" {
		t.Errorf("recent line %q", got)
	}
}

func TestSpentSubscriptionComingBackNotifies(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	n := h.send(api.Event{Type: api.EventUsageWarning, Provider: "anthropic", CredentialID: "c1", Kind: api.UsageBack, Window: "5h",
		Reason: "Claude Max is back — 5h window reset"})
	want := Notice{Key: "usage/c1/5h", Title: "Claude Max is back — 5h window reset",
		Body: "Its 5h window has room again, so requests go to it again."}
	if len(n) != 1 || n[0] != want {
		t.Fatalf("back notices %+v", n)
	}
	if got := h.view().Events[0]; got != "12:04:31 Claude Max is back (5h window reset)" {
		t.Errorf("recent line %q", got)
	}
}

// The events reach the tray as JSON through the admin client: what the
// model reads is what survives that trip.
func TestUsageEventsSurviveTheWire(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	reset := t0.Add(time.Hour)
	raw, err := json.Marshal(api.Event{Type: api.EventUsageUpdated, Time: t0, Provider: "anthropic", CredentialID: "c1",
		Windows: []api.Window{{Name: "5h", Used: 0.5, ResetsAt: &reset, Binding: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	h.send(ev)
	if ms := h.row("c1").Meters; len(ms) != 1 || ms[0].Text != "5h 50%" || ms[0].Resets != "resets in 1h" || !ms[0].Binding {
		t.Errorf("from JSON %s: %+v", raw, ms)
	}
}

func TestUntil(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{40 * time.Second, "40s"},
		{61 * time.Second, "2m"}, // up to the minute: never early
		{45 * time.Minute, "45m"},
		{2*time.Hour + 13*time.Minute, "2h 13m"},
		{3 * time.Hour, "3h"},
		{50 * time.Hour, "2d 2h"},
		{48 * time.Hour, "2d"},
	} {
		if got := Until(c.d); got != c.want {
			t.Errorf("Until(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestWindowName(t *testing.T) {
	for in, want := range map[string]string{"5h": "5h", "7d_sonnet": "7d sonnet", "7d_oi": "7d extra", "": "usage", "requests": "requests"} {
		if got := WindowName(in); got != want {
			t.Errorf("WindowName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every answer reports per-minute request and token counts; a subscription
// shows its plan's windows without them, an API key only the count that
// limits it.
func TestCountWindowsOnlyForAPIKeys(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	counts := []api.Window{
		{Name: "requests", Used: 0.01, ResetsAt: at(time.Minute)},
		{Name: "input_tokens", Used: 0.40, ResetsAt: at(time.Minute)},
		{Name: "tokens", Used: 0.20, ResetsAt: at(time.Minute)},
	}
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "anthropic", CredentialID: "c1",
		Windows: append([]api.Window{{Name: "5h", Used: 0.3, ResetsAt: at(time.Hour)}, {Name: "7d", Used: 0.5, ResetsAt: at(50 * time.Hour)}}, counts...)})
	h.send(api.Event{Type: api.EventUsageUpdated, Provider: "openai", CredentialID: "o2", Windows: counts})
	var names []string
	for _, m := range h.row("c1").Meters {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "5h,7d" || !h.row("c1").Meters[1].Binding {
		t.Errorf("subscription bars %v", h.row("c1").Meters)
	}
	if ms := h.row("o2").Meters; len(ms) != 1 || ms[0].Text != "input tokens 40%" || !ms[0].Binding {
		t.Errorf("API key bars %+v", ms)
	}
}

// With a reserve, the warning says where the login will be held back; the
// reset comes from the event when the model has no such window yet.
func TestUsageWarningNamesTheReserve(t *testing.T) {
	h := newHarness(t)
	s := quotaSnapshot()
	s.Providers[0].Credentials[0].Reserve = 10
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	n := h.send(api.Event{Type: api.EventUsageWarning, Provider: "anthropic", CredentialID: "c1", Kind: api.UsageWarnAt,
		Window: "7d_opus", Used: 0.9, Until: at(3 * time.Hour)})
	if len(n) != 1 || n[0].Title != "Claude Max: 7d opus window at 90%" ||
		n[0].Body != "It resets at 15:04 (in 3h). Your 10% reserve holds it back at 90%." {
		t.Errorf("notices %+v", n)
	}
}

// The reserve's hold and its setting arrive as credential_updated: Until
// is when the hold ends, "reserve N%" the new setting.
func TestReserveFromEvents(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", State: api.StateReady,
		Reason: "reserve 10%"})
	if r := h.row("c1"); r.Badge.Text != "ready" {
		t.Fatalf("a reserve not reached holds nothing: %+v", r.Badge)
	}
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", State: api.StateReady,
		Reason: "held back by its reserve (10% of the 7d_sonnet window kept for your own use) until it resets", Until: at(time.Hour)})
	r := h.row("c1")
	if r.Badge.Text != "reserve" || r.Line != "kept for your own use: 10% reserve · frees in 1h (13:04)" ||
		r.Reason != "held back by its reserve (10% of the 7d_sonnet window kept for your own use) until it resets" {
		t.Errorf("held: %+v %q %q", r.Badge, r.Line, r.Reason)
	}
	// The person lowers the reserve to 0: nothing holds it any more.
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c1", State: api.StateReady, Reason: "reserve 0%"})
	if r := h.row("c1"); r.Badge.Text != "ready" {
		t.Errorf("after reserve 0%%: %+v", r.Badge)
	}
}

// A config.toml edit that is refused tells the person at once, since the
// saved file no longer shows what runs; a reload and client keys are
// lines in the recent list.
func TestConfigAndClientEvents(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: quotaSnapshot()})
	n := h.send(api.Event{Type: api.EventConfigRejected, Reason: `cooldown.ladder[0]: "3x" is not a duration`})
	want := Notice{Key: "config/rejected", Title: "config.toml edit refused",
		Body: `cooldown.ladder[0]: "3x" is not a duration. subpool keeps the config it had; fix the file and save it again.`}
	if len(n) != 1 || n[0] != want {
		t.Fatalf("notices %+v", n)
	}
	if n := h.send(api.Event{Type: api.EventConfigReloaded, Reason: "models applied"}); len(n) != 0 {
		t.Errorf("a reload notified: %+v", n)
	}
	h.send(api.Event{Type: api.EventClientAdded, Client: "codex"})
	ev := h.view().Events
	if len(ev) < 3 || !strings.HasSuffix(ev[0], "client key \u201ccodex\u201d added") || !strings.HasSuffix(ev[1], "config.toml reloaded (models applied)") ||
		!strings.Contains(ev[2], "config.toml edit refused") {
		t.Errorf("recent %q", ev)
	}
}
