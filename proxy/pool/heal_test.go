package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// A subscription spent until its 5h window resets in 3 hours is cooling;
// twenty minutes later a poll shows the window reset early (12% used,
// the new window's reset five hours out): the cooldown ends then, says
// why, and the login serves at once, not at the announced reset.
func TestPollShowingRoomEndsTheCooldownEarly(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 1, 3*time.Hour, 0.5, week, "anthropic-ratelimit-unified-5h-status: rejected"))
	if s := f.status("a"); s.State != api.StateCooling || s.Cooldowns[0].Until != t0.Add(3*time.Hour) {
		t.Fatalf("after the spent window: %+v, want cooling for 3h", s)
	}
	f.rec.take()
	f.clk.Advance(20 * time.Minute)
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.12, 5*time.Hour, 0.5, week))
	ended := f.rec.take(api.EventCooldownEnded)
	if len(ended) != 1 || !strings.Contains(ended[0].Reason, "5h window has room again (12% used)") || !strings.Contains(ended[0].Reason, "2h40m") {
		t.Fatalf("cooldown_ended %+v, want one saying the 5h window has room, 2h40m early", ended)
	}
	if s := f.status("a"); s.State != api.StateReady || len(s.Cooldowns) != 0 || s.Reason != "" {
		t.Fatalf("after the poll: %+v, want ready with no cooldown or reason", s)
	}
	if got := f.pick("claude-sonnet-4-5"); got != "a" {
		t.Fatalf("picked %q", got)
	}
	// The timer of the old reset finds nothing left to end.
	f.clk.Advance(3 * time.Hour)
	if evs := f.rec.take(api.EventCooldownEnded); len(evs) != 0 {
		t.Fatalf("a second cooldown_ended at the old reset: %+v", evs)
	}
}

// A 429 that named no window cooled the credential by the ladder; a
// report that the 5h window has room says nothing about that limit, so
// the cooldown runs its time. One whose answer showed the 7d window spent
// until its reset ends when the 7d window has room, and not before.
func TestOnlyTheWindowACooldownWaitsOnEndsIt(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "bare", "weekly")
	f.p.CoolDown("bare", "", ScopeCredential, 0, "429 rate_limit_error")
	f.p.SetQuota("weekly", claudeQuota(t, f.now(), 0.3, 2*time.Hour, 1, 2*24*time.Hour, "anthropic-ratelimit-unified-7d-status: rejected"))
	f.p.CoolDown("weekly", "", ScopeCredential, 2*24*time.Hour, "429 rate_limit_error: weekly limit")
	f.rec.take()

	f.clk.Advance(10 * time.Second)
	f.p.SetQuota("bare", claudeQuota(t, f.now(), 0.2, 4*time.Hour, 0.2, week))
	f.p.SetQuota("weekly", claudeQuota(t, f.now(), 0.1, 5*time.Hour, 0.99, 2*24*time.Hour))
	if evs := f.rec.take(api.EventCooldownEnded); len(evs) != 0 {
		t.Fatalf("ended %+v: the bare 429's window is unknown, the weekly one still full", evs)
	}
	if s := f.status("bare"); s.State != api.StateCooling {
		t.Fatalf("bare 429: %+v, want still cooling", s)
	}
	f.p.SetQuota("weekly", claudeQuota(t, f.now(), 0.1, 5*time.Hour, 0.02, week))
	if evs := f.rec.take(api.EventCooldownEnded); len(evs) != 1 || evs[0].CredentialID != "weekly" || !strings.Contains(evs[0].Reason, "7d window has room") {
		t.Fatalf("ended %+v, want the weekly login's cooldown, for its 7d window", evs)
	}
	if s := f.status("bare"); s.State != api.StateCooling {
		t.Fatalf("bare 429 after another login healed: %+v", s)
	}
}

// The window a cooldown waits on is kept across a restart: a poll after
// it still ends the cooldown.
func TestHealingSurvivesARestart(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 1, 3*time.Hour, 0.5, week, "anthropic-ratelimit-unified-5h-status: rejected"))
	saved := f.p.State()
	g := subFixture(t, UsageConfig{}, "a")
	g.clk.Advance(time.Minute)
	g.p.Restore(saved)
	g.rec.take()
	g.p.SetQuota("a", claudeQuota(t, g.now(), 0.05, 5*time.Hour, 0.5, week))
	if s := g.status("a"); s.State != api.StateReady {
		t.Fatalf("after restart and a poll with room: %+v", s)
	}
}

// A 429 whose own answer showed its window spent until the 429's reset
// waits on that window (here one extra usage kept serving, so the window
// alone started no cooldown): a later report of room ends it.
func TestA429WithItsWindowHeals(t *testing.T) {
	f := subFixture(t, UsageConfig{AllowExtraUsage: true}, "a")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 1, 2*time.Hour, 0.4, week,
		"anthropic-ratelimit-unified-5h-status: rejected", "anthropic-ratelimit-unified-overage-in-use: true"))
	if s := f.status("a"); s.State != api.StateReady {
		t.Fatalf("extra usage allowed: %+v, want still ready", s)
	}
	f.p.CoolDown("a", "", ScopeCredential, 2*time.Hour, "429 rate_limit_error")
	f.rec.take()
	f.clk.Advance(time.Minute)
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.01, 5*time.Hour, 0.4, week))
	if s := f.status("a"); s.State != api.StateReady {
		t.Fatalf("after the window started over: %+v, want ready", s)
	}
}
