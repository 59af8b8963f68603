package view

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

var t0 = time.Date(2025, 6, 1, 12, 4, 31, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// snapshot is two providers, two credentials each, all ready; claude-max
// reports usage.
func snapshot() *api.Status {
	return &api.Status{
		Listen: "127.0.0.1:8787",
		Now:    t0,
		Providers: []api.ProviderStatus{
			{Name: "anthropic", Wire: "anthropic", Credentials: []api.CredentialStatus{
				{ID: "c1", Provider: "anthropic", Label: "claude-max", Kind: api.KindOAuth, State: api.StateReady,
					Usage: &api.Utilization{
						FiveHour: &api.Window{Used: 0.42, ResetsAt: at(2 * time.Hour)},
						SevenDay: &api.Window{Used: 0.80},
					},
					Counters: api.Counters{Requests: 12, Errors: 1, RateLimits: 1}},
				{ID: "c2", Provider: "anthropic", Label: "claude-pro", Kind: api.KindOAuth, Source: "claude-code", State: api.StateReady},
			}},
			{Name: "openai", Wire: "openai", Credentials: []api.CredentialStatus{
				{ID: "o1", Provider: "openai", Label: "codex-plus", Kind: api.KindOAuth, State: api.StateReady},
				{ID: "o2", Provider: "openai", Label: "openai-key", Kind: api.KindAPIKey, State: api.StateReady},
			}},
		},
	}
}

// harness drives a Model on a fake clock and collects notices.
type harness struct {
	t       *testing.T
	clk     *clock.Fake
	m       *Model
	notices []Notice
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, clk: clock.NewFake(t0), m: &Model{Loc: time.UTC}}
}

// send applies ev stamped with the clock's now and returns its notices.
func (h *harness) send(ev api.Event) []Notice {
	h.t.Helper()
	if ev.Time.IsZero() {
		ev.Time = h.clk.Now()
	}
	n := h.m.Apply(ev, h.clk.Now())
	h.notices = append(h.notices, n...)
	return n
}

func (h *harness) view() View { return h.m.View(h.clk.Now()) }

func (h *harness) row(id string) Row {
	h.t.Helper()
	for _, s := range h.view().Sections {
		for _, r := range s.Rows {
			if r.ID == id {
				return r
			}
		}
	}
	h.t.Fatalf("no row %s", id)
	return Row{}
}

func (h *harness) section(name string) Section {
	h.t.Helper()
	for _, s := range h.view().Sections {
		if s.Name == name {
			return s
		}
	}
	h.t.Fatalf("no section %s", name)
	return Section{}
}

func until(d time.Duration, now time.Time) *time.Time { t := now.Add(d); return &t }

func TestStreamDrivesRowsAndTray(t *testing.T) {
	h := newHarness(t)
	if v := h.view(); v.Tray != TrayOffline || !v.ReadOnly || !strings.Contains(v.Banner, "Connecting") {
		t.Fatalf("before any event: tray %q readOnly %v banner %q", v.Tray, v.ReadOnly, v.Banner)
	}

	streamAllReady(t, h)
	streamCooldown(t, h)
	streamCapacityWait(t, h)
	streamRelogin(t, h)
	streamModelPark(t, h)
	streamOffline(t, h)

	v := h.view()
	wantEvents := []string{
		"12:05:06 lost the connection to the proxy",
		"12:05:06 openai-key parked for gpt-5-pro (payment, plan lacks gpt-5-pro)",
		"12:05:06 claude-pro needs a new login (refresh token revoked)",
		"12:05:06 Claude capacity wait ended after 5s: served",
		"12:05:01 Claude overloaded: a request waits on claude-max (up to 5m)",
		"12:05:01 claude-max ready again",
		"12:04:31 claude-max cooling 30s (429 rate limit, step 1/3)",
		"12:04:31 connected to the proxy (4 credentials)",
	}
	if !slices.Equal(v.Events, wantEvents) {
		t.Errorf("recent events:\n%s\nwant:\n%s", strings.Join(v.Events, "\n"), strings.Join(wantEvents, "\n"))
	}
}

func TestReloginNotifiesOncePerBreakage(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	relogin := api.Event{Type: api.EventReloginRequired, Provider: "anthropic", CredentialID: "c2", Reason: "refresh token revoked"}

	if n := h.send(relogin); len(n) != 1 || n[0].Key != "relogin/c2" {
		t.Fatalf("first relogin_required: %+v", n)
	}
	if n := h.send(relogin); len(n) != 0 {
		t.Fatalf("the same relogin_required again notified: %+v", n)
	}
	// Requests keep failing on other credentials; nothing repeats.
	h.send(api.Event{Type: api.EventRequestFinished, Provider: "anthropic", CredentialID: "c1", Class: "ok"})
	// A reconnect that still shows it parked is the same episode.
	s := snapshot()
	s.Providers[0].Credentials[1].State = api.StateParked
	s.Providers[0].Credentials[1].Parks = []api.Park{{Kind: api.ParkRelogin, Since: t0}}
	h.send(api.Event{Type: EventOffline})
	if n := h.send(api.Event{Type: api.EventSnapshot, Snapshot: s}); len(n) != 0 {
		t.Fatalf("reconnect with the same breakage notified: %+v", n)
	}
	// Fixed, then broken again: that is news.
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "anthropic", CredentialID: "c2", State: api.StateReady})
	if r := h.row("c2"); r.Badge.Text != "ready" || r.CanRelogin {
		t.Fatalf("after the fix: %+v", r)
	}
	if n := h.send(relogin); len(n) != 1 {
		t.Fatalf("broken again: %+v", n)
	}
}

func TestReloginOnAPIKeyAsksForAKey(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	n := h.send(api.Event{Type: api.EventParked, Provider: "openai", CredentialID: "o2", Class: "auth_invalid", Reason: "key revoked"})
	if len(n) != 1 || n[0].Title != "openai-key: key refused" {
		t.Fatalf("notices %+v", n)
	}
	if r := h.row("o2"); r.ReloginText != "Replace key" || r.Line != "key refused: replace it" {
		t.Errorf("row %+v", r)
	}
}

func TestSnapshotParkNotifiesAtStart(t *testing.T) {
	h := newHarness(t)
	s := snapshot()
	s.Providers[1].Credentials[0].State = api.StateParked
	s.Providers[1].Credentials[0].Parks = []api.Park{{Kind: api.ParkRelogin, Reason: "refresh token reused", Since: t0}}
	n := h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	if len(n) != 1 || n[0].Key != "relogin/o1" || !strings.Contains(n[0].Body, "refresh token reused") {
		t.Fatalf("notices %+v", n)
	}
}

func TestProviderExhaustedNotifiesWithNextReady(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	cool := func(id string, d time.Duration) []Notice {
		return h.send(api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: id,
			Until: until(d, h.clk.Now()), Step: 1, Steps: 3, Scope: "credential", Reason: "429"})
	}
	if n := cool("c1", time.Minute); len(n) != 0 {
		t.Fatalf("one of two cooling notified: %+v", n)
	}
	n := cool("c2", 30*time.Second)
	if len(n) != 1 || n[0].Title != "No Claude credential is ready" ||
		n[0].Body != "All are cooling down; the next is ready in 30s (at 12:05:01). Requests wait or fail until then." {
		t.Fatalf("exhausted notices %+v", n)
	}
	if v := h.view(); v.Tray != TrayAttention {
		t.Errorf("exhausted: tray %q", v.Tray)
	}
	if s := h.section("anthropic"); s.Summary != "none ready · next in 30s" || s.Level != LevelBad {
		t.Errorf("exhausted section %q %v", s.Summary, s.Level)
	}
	h.send(api.Event{Type: api.EventFallback, From: "anthropic", To: "openai"})
	if notes := h.section("anthropic").Notes; !slices.Contains(notes, "served by ChatGPT while Claude cools down") {
		t.Errorf("fallback note missing: %q", notes)
	}
	// A cooldown moving on within the same episode says nothing new.
	if n := cool("c2", 45*time.Second); len(n) != 0 {
		t.Fatalf("same episode notified again: %+v", n)
	}
	// Both run out with no event; the next exhaustion is a new episode.
	h.clk.Advance(2 * time.Minute)
	if v := h.view(); v.Tray != TrayReady {
		t.Errorf("after expiry: tray %q", v.Tray)
	}
	cool("c1", time.Minute)
	if n := cool("c2", time.Minute); len(n) != 1 {
		t.Fatalf("second episode: %+v", n)
	}
}

func TestExhaustedByParksHasNoNextTime(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventParked, Provider: "openai", CredentialID: "o1", Kind: api.ParkPayment, Reason: "billing hard limit"})
	n := h.send(api.Event{Type: api.EventReloginRequired, Provider: "openai", CredentialID: "o2"})
	var keys []string
	for _, x := range n {
		keys = append(keys, x.Key)
	}
	if !slices.Equal(keys, []string{"relogin/o2", "exhausted/openai"}) {
		t.Fatalf("notices %q", keys)
	}
	if !strings.HasPrefix(n[1].Body, "Every ChatGPT credential needs you") {
		t.Errorf("body %q", n[1].Body)
	}
	if r := h.row("o1"); r.Line != "payment: billing hard limit" || r.Badge != (Badge{"payment", LevelBad}) {
		t.Errorf("billing row %+v", r)
	}
}

func TestAllPausedIsNotExhausted(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o1", State: api.StatePaused})
	if n := h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o2", State: api.StatePaused}); len(n) != 0 {
		t.Fatalf("pausing everything notified: %+v", n)
	}
	v := h.view()
	if v.Tray != TrayReady {
		t.Errorf("tray %q", v.Tray)
	}
	r := h.row("o1")
	if r.Line != "" || r.Badge.Text != "paused" || r.CanPause || !r.CanResume {
		t.Errorf("paused row %+v", r)
	}
	if !slices.Equal(v.ResumeIDs, []string{"o1", "o2"}) || !slices.Equal(v.PauseIDs, []string{"c1", "c2"}) {
		t.Errorf("pause %q resume %q", v.PauseIDs, v.ResumeIDs)
	}
}

func TestProviderCooldownCoversEveryCredential(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	n := h.send(api.Event{Type: api.EventCooldownStarted, Provider: "openai", Scope: "provider",
		Until: until(time.Minute, h.clk.Now()), Reason: "egress 429"})
	if len(n) != 1 || n[0].Key != "exhausted/openai" {
		t.Fatalf("notices %+v", n)
	}
	h.clk.Advance(15 * time.Second)
	r := h.row("o1")
	if r.Line != "cooling 45s · egress 429" || r.Countdown != 0.75 {
		t.Errorf("row under an egress cooldown: %q %v", r.Line, r.Countdown)
	}
	if notes := h.section("openai").Notes; len(notes) != 1 || notes[0] != "every ChatGPT credential waits 45s · egress 429" {
		t.Errorf("notes %q", notes)
	}
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "openai", Scope: "provider"})
	if v := h.view(); v.Tray != TrayReady {
		t.Errorf("tray %q", v.Tray)
	}
}

func TestModelCooldownLeavesCredentialUsable(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "c2", Scope: "model",
		Model: "claude-opus-4", Until: until(2*time.Minute, h.clk.Now()), Step: 2, Steps: 3, Reason: "429"})
	r := h.row("c2")
	if r.Badge != (Badge{"limited", LevelWarn}) || r.Line != "claude-opus-4 cooling 2m · 429 · step 2/3" || !r.Counting {
		t.Errorf("row %+v", r)
	}
	// Still serving, but not every model: counted "limited" in the header
	// and the title alike, never "ready" beside a "limited" badge.
	if got := h.section("anthropic").Summary; got != "1 of 2 ready · 1 limited" {
		t.Errorf("summary %q", got)
	}
	if v := h.view(); v.Tray != TrayCooling || !strings.Contains(v.Summary, "1 limited") {
		t.Errorf("tray %q summary %q", v.Tray, v.Summary)
	}
}

// A spent request budget and a 429 can hold one model at once; each ends
// on its own and takes only itself off the row.
func TestBudgetAndRateLimitOnOneModel(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "c2", Scope: "model",
		Model: "claude-opus-4", Until: until(2*time.Minute, h.clk.Now()), Step: 2, Steps: 3, Reason: "429"})
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "c2", Scope: "model",
		Model: "claude-opus-4", Until: until(30*time.Second, h.clk.Now()), Reason: "budget spent", Budget: true})
	if r := h.row("c2"); r.Line != "claude-opus-4 cooling 2m · 429 · step 2/3" || !r.Counting {
		t.Errorf("both: row %q counting %v", r.Line, r.Counting)
	}
	h.clk.Advance(30 * time.Second)
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "anthropic", CredentialID: "c2", Scope: "model",
		Model: "claude-opus-4", Reason: "budget spent", Budget: true})
	r := h.row("c2")
	if r.Line != "claude-opus-4 cooling 1m30s · 429 · step 2/3" || !r.Counting || r.Countdown != 0.75 {
		t.Errorf("after the budget: row %q counting %v bar %v", r.Line, r.Counting, r.Countdown)
	}
	h.clk.Advance(90 * time.Second)
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "anthropic", CredentialID: "c2", Scope: "model",
		Model: "claude-opus-4", Reason: "429"})
	if r := h.row("c2"); r.Counting || r.Badge.Level != LevelGood {
		t.Errorf("after both: row %+v", r)
	}
}

func TestSnapshotCooldownStartsItsBarFull(t *testing.T) {
	h := newHarness(t)
	s := snapshot()
	s.Providers[0].Credentials[0].State = api.StateCooling
	s.Providers[0].Credentials[0].Cooldowns = []api.Cooldown{{Scope: "credential", Until: t0.Add(40 * time.Second), Step: 2, Steps: 3}}
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	h.clk.Advance(10 * time.Second)
	if r := h.row("c1"); r.Countdown != 0.75 || r.Line != "cooling 30s · step 2/3" {
		t.Errorf("row %q %v", r.Line, r.Countdown)
	}
	// The sender's snapshot is never written to.
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "anthropic", CredentialID: "c1"})
	if len(s.Providers[0].Credentials[0].Cooldowns) != 1 {
		t.Errorf("the model wrote into the event's snapshot")
	}
}

func TestCredentialAddedAndRemoved(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: &api.Status{Listen: "127.0.0.1:8787"}})
	if v := h.view(); v.Tray != TrayAttention || v.Summary != "no credentials: add one" {
		t.Errorf("empty: tray %q summary %q", v.Tray, v.Summary)
	}
	h.send(api.Event{Type: api.EventCredentialAdded, Provider: "zai", CredentialID: "z1", Label: "zai-key", Kind: api.KindAPIKey})
	v := h.view()
	if v.Tray != TrayReady || len(v.Sections) != 1 || v.Sections[0].Title != "zai" || v.Sections[0].Rows[0].Detail != "API key" {
		t.Fatalf("after add: %+v", v)
	}
	if !slices.Equal(v.Providers, []string{"zai", "anthropic", "openai", "google"}) {
		t.Errorf("providers offered %q", v.Providers)
	}
	h.send(api.Event{Type: api.EventCredentialRemoved, Provider: "zai", CredentialID: "z1"})
	v = h.view()
	if len(v.Sections[0].Rows) != 0 || v.Events[0] != "12:04:31 zai-key removed" {
		t.Errorf("after remove: rows %d events %q", len(v.Sections[0].Rows), v.Events)
	}
}

func TestRequestFinishedCounts(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	for _, class := range []string{"ok", "rate_limit", "transient", "aborted"} {
		h.send(api.Event{Type: api.EventRequestFinished, Provider: "openai", CredentialID: "o1", Class: class})
	}
	if got := h.row("o1").Counts; got != "4 requests · 2 errors · 1 rate limit" {
		t.Errorf("counts %q", got)
	}
	if v := h.view(); len(v.Events) != 1 {
		t.Errorf("request_finished went into the recent list: %q", v.Events)
	}
}

func TestUnauthorizedIsReadOnlyAttention(t *testing.T) {
	h := newHarness(t)
	if n := h.send(api.Event{Type: EventUnauthorized}); len(n) != 0 {
		t.Errorf("notices %+v", n)
	}
	v := h.view()
	if v.Tray != TrayAttention || !v.ReadOnly || !strings.Contains(v.Banner, "refused subpool's admin token") {
		t.Errorf("tray %q readOnly %v banner %q", v.Tray, v.ReadOnly, v.Banner)
	}
}

func TestOfflineNotifiesOnlyWhenUnexpected(t *testing.T) {
	h := newHarness(t)
	if n := h.send(api.Event{Type: EventOffline}); len(n) != 0 {
		t.Errorf("never online, yet notified: %+v", n)
	}
	if v := h.view(); !strings.Contains(v.Banner, "is not answering") {
		t.Errorf("banner %q", v.Banner)
	}
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventProxyStopping})
	if n := h.send(api.Event{Type: EventOffline}); len(n) != 0 {
		t.Errorf("a proxy stopping on purpose notified: %+v", n)
	}
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	if n := h.send(api.Event{Type: EventOffline}); len(n) != 1 {
		t.Errorf("an unexpected drop after reconnecting: %+v", n)
	}
}

func TestRecentKeepsTheLastHundred(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	for i := 0; i < 150; i++ {
		h.clk.Advance(time.Second)
		h.send(api.Event{Type: api.EventTokenRefreshed, Provider: "anthropic", CredentialID: "c1"})
	}
	v := h.view()
	if len(v.Events) != MaxRecent {
		t.Fatalf("%d events", len(v.Events))
	}
	if v.Events[0] != "12:07:01 claude-max token refreshed" || v.Events[99] != "12:05:22 claude-max token refreshed" {
		t.Errorf("newest %q, oldest %q", v.Events[0], v.Events[99])
	}
}

func TestMenu(t *testing.T) {
	h := newHarness(t)
	h.m.Address = "127.0.0.1:9999"
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o2", State: api.StatePaused})
	on := true
	items := h.view().Menu(MenuOptions{Setup: true, StartAtLogin: &on})
	var lines []string
	for _, it := range items {
		switch {
		case it.Separator:
			lines = append(lines, "---")
		case it.Children != nil:
			var kids []string
			for _, k := range it.Children {
				kids = append(kids, k.Label+"="+k.Arg)
			}
			lines = append(lines, it.Label+" > "+strings.Join(kids, ", "))
		default:
			s := it.Label
			if it.Disabled {
				s += " [off]"
			}
			if it.Checked {
				s += " [x]"
			}
			lines = append(lines, s)
		}
	}
	want := []string{
		"Proxy: 127.0.0.1:9999 [off]",
		"---",
		"claude-max — 7d 80%", // binding, with no reset known
		"claude-pro — ready",
		"codex-plus — ready",
		"openai-key — paused",
		"---",
		"Open panel…",
		"Copy setup for > Claude Code=claude-code, Codex CLI=codex, Gemini CLI=gemini-cli, opencode=opencode",
		"Pause all",
		"Resume all",
		"---",
		"Start at login [x]",
		"Quit",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("menu:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	h.send(api.Event{Type: EventOffline})
	items = h.view().Menu(MenuOptions{})
	if items[0].Label != "Proxy: 127.0.0.1:9999 (offline)" {
		t.Errorf("offline head %q", items[0].Label)
	}
	for _, it := range items {
		if (it.Action == ActPauseAll || it.Action == ActResumeAll) && !it.Disabled {
			t.Errorf("%s enabled while offline", it.Label)
		}
		if it.Action == ActStartAtLogin || it.Action == ActCopySetup || it.Children != nil {
			t.Errorf("%q shown without its option", it.Label)
		}
	}
}

func TestDur(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{400 * time.Millisecond, "1s"}, // rounds up: never "0s" while still cooling
		{30 * time.Second, "30s"},
		{72 * time.Second, "1m12s"},
		{65 * time.Second, "1m05s"},
		{5 * time.Minute, "5m"},
		{4*time.Hour + 5*time.Minute, "4h05m"},
		{2 * time.Hour, "2h"},
		{51 * time.Hour, "2d3h"},
	} {
		if got := Dur(c.d); got != c.want {
			t.Errorf("Dur(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestUsageLevel(t *testing.T) {
	for _, c := range []struct {
		used float64
		want Level
	}{{0, LevelGood}, {0.699, LevelGood}, {0.70, LevelWarn}, {0.899, LevelWarn}, {0.90, LevelBad}, {1.2, LevelBad}} {
		if got := UsageLevel(c.used); got != c.want {
			t.Errorf("UsageLevel(%v) = %v, want %v", c.used, got, c.want)
		}
	}
}

// The pool's reset ends every cooldown and payment park, and its unpark
// every park; both arrive as credential_updated with that word as Reason.
func TestResetAndUnparkClearWhatThePoolClears(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventParked, Provider: "openai", CredentialID: "o2", Kind: api.ParkPayment,
		Model: "gpt-5-pro", Reason: "plan lacks gpt-5-pro"})
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "openai", CredentialID: "o2", Scope: "model",
		Model: "gpt-5", Until: until(time.Minute, h.clk.Now()), Reason: "429"})
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o2", State: api.StateReady, Reason: "reset"})
	if r := h.row("o2"); r.Badge.Text != "ready" || r.Reason != "" || r.CanReset || r.Counting {
		t.Errorf("after reset: %+v", r)
	}

	h.send(api.Event{Type: api.EventReloginRequired, Provider: "openai", CredentialID: "o1", Reason: "token revoked"})
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o1", State: api.StateReady, Reason: "unparked"})
	if r := h.row("o1"); r.Badge.Text != "ready" || r.Reason != "" || r.CanRelogin {
		t.Errorf("after unpark: %+v", r)
	}
	if n := h.send(api.Event{Type: api.EventReloginRequired, Provider: "openai", CredentialID: "o1"}); len(n) != 1 {
		t.Errorf("broken again after unpark: %+v", n)
	}
}

func TestSuccessClearsAnOldReason(t *testing.T) {
	h := newHarness(t)
	s := snapshot()
	s.Providers[0].Credentials[0].Reason = "429 rate limit"
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	h.send(api.Event{Type: api.EventRequestFinished, Provider: "anthropic", CredentialID: "c1", Class: "client_error"})
	if r := h.row("c1"); r.Reason != "429 rate limit" || r.Counts != "13 requests · 1 error · 1 rate limit" {
		t.Errorf("after a client error: reason %q counts %q", r.Reason, r.Counts)
	}
	h.send(api.Event{Type: api.EventRequestFinished, Provider: "anthropic", CredentialID: "c1", Class: "ok"})
	if r := h.row("c1"); r.Reason != "" {
		t.Errorf("after a success: reason %q", r.Reason)
	}
}

// The pool repeats a provider-wide cooldown on each credential of the
// provider; its end must clear it on all of them.
func TestSnapshotProviderCooldownOnCredentials(t *testing.T) {
	h := newHarness(t)
	s := snapshot()
	cd := api.Cooldown{Scope: "provider", Until: t0.Add(time.Minute), Step: 1, Steps: 3, Reason: "egress 429"}
	for i := range s.Providers[1].Credentials {
		c := &s.Providers[1].Credentials[i]
		c.State = api.StateCooling
		c.Cooldowns = []api.Cooldown{cd}
	}
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: s})
	if r := h.row("o1"); r.Line != "cooling 1m · egress 429 · step 1/3" || !r.Counting {
		t.Errorf("under the egress cooldown: %q counting %v", r.Line, r.Counting)
	}
	if sec := h.section("openai"); sec.Summary != "none ready · next in 1m" {
		t.Errorf("summary %q", sec.Summary)
	}
	h.clk.Advance(10 * time.Second)
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "openai", Scope: "provider"})
	for _, id := range []string{"o1", "o2"} {
		if r := h.row(id); r.Badge.Text != "ready" {
			t.Errorf("%s after the egress cooldown ended: %+v", id, r)
		}
	}
}

// The pool sends parked and then relogin_required for one revoked login:
// one notice, one line.
func TestPoolReloginPairSaysItOnce(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	n := h.send(api.Event{Type: api.EventParked, Provider: "anthropic", CredentialID: "c2", Kind: api.ParkRelogin,
		State: api.StateParked, Reason: "invalid_grant"})
	n = append(n, h.send(api.Event{Type: api.EventReloginRequired, Provider: "anthropic", CredentialID: "c2", Reason: "invalid_grant"})...)
	if len(n) != 1 {
		t.Errorf("notices %+v", n)
	}
	want := []string{"12:04:31 claude-pro needs a new login (invalid_grant)", "12:04:31 connected to the proxy (4 credentials)"}
	if v := h.view(); !slices.Equal(v.Events, want) {
		t.Errorf("events %q", v.Events)
	}
}

// The recent list says why a cooldown ended early (its window showed room
// again) and names a region park for what it is, not a payment.
func TestRecentSaysWhyACooldownHealedAndARegionPark(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "anthropic", CredentialID: "c1", Scope: "credential",
		Reason: "the 5h window has room again (4% used)"})
	h.send(api.Event{Type: api.EventParked, Provider: "openai", CredentialID: "o1", Kind: api.ParkRegion,
		Reason: "set [network] proxy in config.toml"})
	v := h.view()
	if len(v.Events) < 2 || !strings.HasSuffix(v.Events[1], "claude-max ready again (the 5h window has room again (4% used))") {
		t.Errorf("cooldown_ended line: %q", v.Events)
	}
	if !strings.Contains(v.Events[0], "parked (the provider refuses its location, set [network] proxy in config.toml)") {
		t.Errorf("region park line: %q", v.Events[0])
	}
}

// streamAllReady is a step of TestStreamDrivesRowsAndTray: the snapshot
// shows every credential ready.
func streamAllReady(t *testing.T, h *harness) {
	t.Helper()
	if n := h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()}); len(n) != 0 {
		t.Fatalf("snapshot with nothing wrong notified: %v", n)
	}
	v := h.view()
	if v.Tray != TrayReady || v.Banner != "" || v.ReadOnly {
		t.Fatalf("all ready: tray %q banner %q readOnly %v", v.Tray, v.Banner, v.ReadOnly)
	}
	if v.Summary != "4 ready" {
		t.Errorf("summary %q", v.Summary)
	}
	r := h.row("c1")
	// The badge says ready and the bars say how much: no line repeats them.
	if r.Line != "" || r.Badge != (Badge{"ready", LevelGood}) {
		t.Errorf("ready row: line %q badge %+v", r.Line, r.Badge)
	}
	// Only the 5h and 7d fields (a proxy without Windows): the fuller binds.
	if len(r.Meters) != 2 {
		t.Fatalf("meters %+v", r.Meters)
	}
	if m := r.Meters[0]; m.Name != "5h" || m.Value != 0.42 || m.Level != LevelGood || m.Resets != "resets in 2h" || m.Binding {
		t.Errorf("5h meter %+v", m)
	}
	if m := r.Meters[1]; m.Name != "7d" || m.Value != 0.80 || m.Level != LevelWarn || m.Resets != "" || !m.Binding {
		t.Errorf("7d meter %+v", m)
	}
	if r.Counts != "12 requests · 1 error · 1 rate limit" {
		t.Errorf("counts %q", r.Counts)
	}
	if !r.CanPause || r.CanResume || r.CanReset || !r.CanRemove || r.CanRelogin {
		t.Errorf("ready buttons %+v", r)
	}
	if got := h.row("c2").Detail; got != "subscription · imported from Claude Code" {
		t.Errorf("detail %q", got)
	}
	if s := h.section("anthropic"); s.Title != "Claude" || s.Summary != "2 of 2 ready" {
		t.Errorf("section %q %q", s.Title, s.Summary)
	}
}

// streamCooldown is a step of TestStreamDrivesRowsAndTray: claude-max
// cools down, and the countdown runs with the clock.
func streamCooldown(t *testing.T, h *harness) {
	t.Helper()
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "c1",
		Until: until(30*time.Second, h.clk.Now()), Step: 1, Steps: 3, Scope: "credential", Reason: "429 rate limit"})
	v := h.view()
	if v.Tray != TrayCooling || !v.Ticking {
		t.Fatalf("cooling: tray %q ticking %v", v.Tray, v.Ticking)
	}
	r := h.row("c1")
	if r.Line != "cooling 30s · 429 rate limit · step 1/3" || r.Badge != (Badge{"cooling", LevelInfo}) {
		t.Errorf("cooling row: line %q badge %+v", r.Line, r.Badge)
	}
	if !r.Counting || r.Countdown != 1 || !r.CanReset {
		t.Errorf("cooling bar: counting %v fraction %v reset %v", r.Counting, r.Countdown, r.CanReset)
	}
	if got := h.section("anthropic").Summary; got != "1 of 2 ready" {
		t.Errorf("section summary %q", got)
	}
	h.clk.Advance(12 * time.Second)
	r = h.row("c1")
	if r.Line != "cooling 18s · 429 rate limit · step 1/3" || r.Countdown != 0.6 {
		t.Errorf("after 12s: line %q fraction %v", r.Line, r.Countdown)
	}
	h.clk.Advance(18 * time.Second)
	// Over by the clock even before cooldown_ended arrives.
	if r = h.row("c1"); r.Counting || r.Badge.Text != "ready" {
		t.Errorf("after the end: counting %v badge %q", r.Counting, r.Badge.Text)
	}
	if v = h.view(); v.Tray != TrayReady || v.Ticking {
		t.Errorf("after the end: tray %q ticking %v", v.Tray, v.Ticking)
	}
	h.send(api.Event{Type: api.EventCooldownEnded, Provider: "anthropic", CredentialID: "c1", Scope: "credential"})
	if r = h.row("c1"); r.Badge.Text != "ready" || r.CanReset {
		t.Errorf("after cooldown_ended: %+v", r)
	}
}

// streamCapacityWait is a step of TestStreamDrivesRowsAndTray: a
// capacity wait holds requests on the provider.
func streamCapacityWait(t *testing.T, h *harness) {
	t.Helper()
	var v View
	h.send(api.Event{Type: api.EventWaitStarted, Provider: "anthropic", CredentialID: "c1", Kind: api.WaitCapacity,
		Until: until(5*time.Minute, h.clk.Now())})
	h.clk.Advance(5 * time.Second)
	if v = h.view(); v.Tray != TrayCooling || !v.Ticking {
		t.Errorf("capacity wait: tray %q ticking %v", v.Tray, v.Ticking)
	}
	notes := h.section("anthropic").Notes
	if len(notes) != 1 || notes[0] != "Claude is overloaded: holding 1 request until it has room (5s so far, 4m55s left)" {
		t.Errorf("wait notes %q", notes)
	}
	h.send(api.Event{Type: api.EventWaitEnded, Provider: "anthropic", CredentialID: "c1", Kind: api.WaitCapacity, WaitMS: 5000, Outcome: "ready"})
	if v = h.view(); v.Tray != TrayReady || len(h.section("anthropic").Notes) != 0 {
		t.Errorf("after the wait: tray %q notes %q", v.Tray, h.section("anthropic").Notes)
	}
}

// streamRelogin is a step of TestStreamDrivesRowsAndTray: claude-pro's
// login is revoked.
func streamRelogin(t *testing.T, h *harness) {
	t.Helper()
	n := h.send(api.Event{Type: api.EventReloginRequired, Provider: "anthropic", CredentialID: "c2", Reason: "refresh token revoked"})
	if len(n) != 1 || n[0].Title != "claude-pro needs a new login" {
		t.Fatalf("relogin notices %+v", n)
	}
	v := h.view()
	if v.Tray != TrayAttention {
		t.Errorf("relogin: tray %q", v.Tray)
	}
	r := h.row("c2")
	if r.Line != "" || r.Badge != (Badge{"log in again", LevelBad}) || !r.CanRelogin || r.ReloginText != "Log in again" || r.Reason != "refresh token revoked" {
		t.Errorf("relogin row %+v", r)
	}
}

// streamModelPark is a step of TestStreamDrivesRowsAndTray: a plan
// without a model parks that model only.
func streamModelPark(t *testing.T, h *harness) {
	t.Helper()
	h.send(api.Event{Type: api.EventParked, Provider: "openai", CredentialID: "o2", Kind: api.ParkPayment,
		Model: "gpt-5-pro", Reason: "plan lacks gpt-5-pro"})
	r := h.row("o2")
	if r.Line != "payment: plan lacks gpt-5-pro" || r.Badge != (Badge{"payment", LevelWarn}) || !r.CanReset {
		t.Errorf("payment row %+v", r)
	}
	// The header counts rows by badge, as the title does: a "payment"
	// badge is not counted ready (issue 42).
	if got := h.section("openai").Summary; got != "1 of 2 ready" {
		t.Errorf("a model park: summary %q", got)
	}
}

// streamOffline is a step of TestStreamDrivesRowsAndTray: the proxy
// goes away.
func streamOffline(t *testing.T, h *harness) {
	t.Helper()
	var r Row
	n := h.send(api.Event{Type: EventOffline})
	if len(n) != 1 || n[0].Key != "offline" {
		t.Fatalf("offline notices %+v", n)
	}
	v := h.view()
	if v.Tray != TrayOffline || !v.ReadOnly || !strings.Contains(v.Banner, "stopped answering at 12:05:06") {
		t.Errorf("offline: tray %q readOnly %v banner %q", v.Tray, v.ReadOnly, v.Banner)
	}
	if r = h.row("c1"); r.CanPause || r.CanRemove || r.CanReset || r.CanRelogin {
		t.Errorf("offline buttons %+v", r)
	}
	if n = h.send(api.Event{Type: EventOffline}); len(n) != 0 {
		t.Errorf("a second offline notified again: %+v", n)
	}
}
