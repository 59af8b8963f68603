package pool

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

// claudeQuota is what a Claude subscription's answer reports, read by the
// real header reader: 5h and 7d used (fractions) resetting after r5 and
// r7, with extra "name: value" headers.
func claudeQuota(t *testing.T, now time.Time, u5 float64, r5 time.Duration, u7 float64, r7 time.Duration, extra ...string) classify.Quota {
	t.Helper()
	h := http.Header{}
	set := func(k, v string) { h.Set(k, v) }
	set("anthropic-ratelimit-unified-status", "allowed")
	set("anthropic-ratelimit-unified-5h-status", "allowed")
	set("anthropic-ratelimit-unified-5h-utilization", strconv.FormatFloat(u5, 'f', -1, 64))
	set("anthropic-ratelimit-unified-5h-reset", strconv.FormatInt(now.Add(r5).Unix(), 10))
	set("anthropic-ratelimit-unified-7d-status", "allowed")
	set("anthropic-ratelimit-unified-7d-utilization", strconv.FormatFloat(u7, 'f', -1, 64))
	set("anthropic-ratelimit-unified-7d-reset", strconv.FormatInt(now.Add(r7).Unix(), 10))
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, ": ")
		set(k, v)
	}
	q, ok := classify.ReadWindows(h, now)
	if !ok {
		t.Fatalf("no windows read from %v", h)
	}
	return q
}

// subFixture is a pool of Claude subscriptions with the given [usage].
func subFixture(t *testing.T, u UsageConfig, ids ...string) *fixture {
	f := newFixture(t, Config{Usage: u})
	for _, id := range ids {
		f.p.Add(Credential{ID: id, Provider: "anthropic", Label: "Claude " + id, Kind: api.KindOAuth})
	}
	f.rec.take()
	return f
}

const week = 7 * 24 * time.Hour

// Issue 15, Show 3 (pool half): with reserve 10, a login at 91% of its
// binding window takes nothing while one at 40% serves.
func TestReserveSendsEverythingToTheLoginWithHeadroom(t *testing.T) {
	f := subFixture(t, UsageConfig{Reserve: 10}, "a", "b")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.91, 2*time.Hour, 0.3, week))
	f.p.SetQuota("b", claudeQuota(t, f.now(), 0.40, 3*time.Hour, 0.2, week))
	for i := range 10 {
		if id := f.pick("claude-sonnet-4-5"); id != "b" {
			t.Fatalf("pick %d went to %s, want b", i, id)
		}
	}
	s := f.status("a")
	if s.Reserve != 10 || s.ReservedUntil == nil || !s.ReservedUntil.Equal(f.now().Add(2*time.Hour).Truncate(time.Second)) {
		t.Fatalf("status of a: reserve %d until %v", s.Reserve, s.ReservedUntil)
	}
	if s.State != api.StateReady {
		t.Fatalf("a reserve-held login is %q; it is not cooling", s.State)
	}
	if b := f.status("b"); b.ReservedUntil != nil {
		t.Fatalf("b held: %v", b.ReservedUntil)
	}
}

// Issue 15, Show 3: at 91% and 95% every login is held; the refusal names
// the reserve and the first reset, and the login serves again then, with
// a "back" notice.
func TestReserveHoldsEveryLoginUntilTheFirstReset(t *testing.T) {
	f := subFixture(t, UsageConfig{Reserve: 10}, "a", "b")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.91, 2*time.Hour, 0.3, week))
	f.p.SetQuota("b", claudeQuota(t, f.now(), 0.95, 3*time.Hour, 0.2, week))
	f.rec.take()
	u := f.unavailable("claude-sonnet-4-5")
	if u.Reserved != 2 || !u.HasNext || u.NextReady != 2*time.Hour {
		t.Fatalf("unavailable %+v, want 2 reserved, next in 2h", u)
	}
	msg := u.Error()
	for _, want := range []string{"reserve", "10%", "frees in 2h"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q lacks %q", msg, want)
		}
	}
	if d, ok := nextReady(f.p, "anthropic", "claude-sonnet-4-5"); !ok || d != 2*time.Hour {
		t.Fatalf("NextReady = %v %v", d, ok)
	}
	changed := f.p.Changed()
	f.clk.Advance(2 * time.Hour)
	select {
	case <-changed:
	default:
		t.Fatal("Changed did not fire at the reset")
	}
	if id := f.pick("claude-sonnet-4-5"); id != "a" {
		t.Fatalf("after a's reset the pick went to %s", id)
	}
	back := f.rec.take(api.EventUsageWarning)
	if len(back) != 1 || back[0].Kind != api.UsageBack || back[0].CredentialID != "a" || back[0].Reason != "Claude a is back — 5h window reset" {
		t.Fatalf("back notices %+v", back)
	}
}

// A login's own reserve replaces [usage] reserve, survives State, and
// API keys never have one.
func TestReservePerCredentialAndState(t *testing.T) {
	f := subFixture(t, UsageConfig{Reserve: 10}, "a")
	f.p.Add(Credential{ID: "k", Provider: "anthropic", Kind: api.KindAPIKey})
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.85, 2*time.Hour, 0.3, week))
	f.p.SetQuota("k", claudeQuota(t, f.now(), 0.99, 2*time.Hour, 0.3, week))
	if got := f.status("k"); got.Reserve != 0 || got.ReservedUntil != nil {
		t.Fatalf("an API key has a reserve: %+v", got)
	}
	if f.status("a").ReservedUntil != nil {
		t.Fatal("85% held by a 10% reserve")
	}
	if err := f.p.SetReserve("a", 20); err != nil {
		t.Fatal(err)
	}
	if f.status("a").ReservedUntil == nil {
		t.Fatal("85% not held by a 20% reserve")
	}
	if err := f.p.SetReserve("a", 100); err == nil {
		t.Fatal("a 100% reserve was accepted")
	}
	st := f.p.State()
	if r := st.Credentials["a"].Reserve; r == nil || *r != 20 {
		t.Fatalf("state reserve %v", r)
	}
	g := subFixture(t, UsageConfig{}, "a")
	if err := g.p.Restore(st); err != nil {
		t.Fatal(err)
	}
	if got := g.status("a").Reserve; got != 20 {
		t.Fatalf("restored reserve %d", got)
	}
	if err := g.p.SetReserve("a", -1); err != nil {
		t.Fatal(err)
	}
	if got := g.status("a").Reserve; got != 0 {
		t.Fatalf("reserve back to the default 0: %d", got)
	}
}

// Issue 15, Show 4: a rejected binding window cools the credential until
// its reset with no 429 seen.
func TestRejectedWindowCoolsUntilItsReset(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	q := claudeQuota(t, f.now(), 1.0, 90*time.Minute, 0.5, week, "anthropic-ratelimit-unified-5h-status: rejected", "anthropic-ratelimit-unified-status: rejected")
	f.p.SetQuota("a", q)
	s := f.status("a")
	if s.State != api.StateCooling || len(s.Cooldowns) != 1 || !s.Cooldowns[0].Until.Equal(f.now().Add(90*time.Minute).Truncate(time.Second)) || s.Cooldowns[0].Step != 0 {
		t.Fatalf("status %+v", s)
	}
	if s.Counters.RateLimits != 0 {
		t.Fatal("a 429 was counted")
	}
	started := f.rec.take(api.EventCooldownStarted)
	if len(started) != 1 || !strings.Contains(started[0].Reason, "5h window spent") {
		t.Fatalf("cooldown_started %+v", started)
	}
	u := f.unavailable("claude-sonnet-4-5")
	if u.Cooling != 1 || u.NextReady != 90*time.Minute {
		t.Fatalf("unavailable %+v", u)
	}
	// The same report again, as every answer repeats it: no new event.
	f.p.SetQuota("a", q)
	if ev := f.rec.take(api.EventCooldownStarted, api.EventCooldownExtended); len(ev) != 0 {
		t.Fatalf("repeated report announced again: %+v", ev)
	}
	f.clk.Advance(90 * time.Minute)
	f.pick("claude-sonnet-4-5")
}

// Issue 15, Show 4: a per-model weekly window cools that model only.
func TestPerModelWindowCoolsOnlyThatModel(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	q := claudeQuota(t, f.now(), 0.2, time.Hour, 0.5, week,
		"anthropic-ratelimit-unified-7d_sonnet-status: rejected",
		"anthropic-ratelimit-unified-7d_sonnet-utilization: 1.0",
		"anthropic-ratelimit-unified-7d_sonnet-reset: "+strconv.FormatInt(f.now().Add(3*24*time.Hour).Unix(), 10))
	f.p.SetQuota("a", q)
	u := f.unavailable("claude-sonnet-4-5")
	if u.Cooling != 1 || u.NextReady != 3*24*time.Hour || !strings.Contains(u.Reasons[0], "for sonnet") {
		t.Fatalf("sonnet: %+v", u)
	}
	if id := f.pick("claude-opus-4-5"); id != "a" {
		t.Fatal("opus was held back by the sonnet window")
	}
	s := f.status("a")
	if s.State != api.StateReady || len(s.Cooldowns) != 1 || s.Cooldowns[0].Model != "sonnet" || s.Cooldowns[0].Scope != "model" {
		t.Fatalf("status %+v", s)
	}
	f.clk.Advance(3 * 24 * time.Hour)
	if ended := f.rec.take(api.EventCooldownEnded); len(ended) != 1 || ended[0].Model != "sonnet" {
		t.Fatalf("cooldown_ended %+v", ended)
	}
	f.pick("claude-sonnet-4-5")
}

// Reset ends a per-model window's cooldown too.
func TestResetEndsModelWindows(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.2, time.Hour, 0.5, week,
		"anthropic-ratelimit-unified-7d_opus-status: rejected",
		"anthropic-ratelimit-unified-7d_opus-utilization: 1.02",
		"anthropic-ratelimit-unified-7d_opus-reset: "+strconv.FormatInt(f.now().Add(48*time.Hour).Unix(), 10)))
	f.unavailable("claude-opus-4-5")
	f.rec.take()
	if err := f.p.Reset("a"); err != nil {
		t.Fatal(err)
	}
	if ended := f.rec.take(api.EventCooldownEnded); len(ended) != 1 || ended[0].Model != "opus" {
		t.Fatalf("cooldown_ended %+v", ended)
	}
	f.pick("claude-opus-4-5")
	if s := f.status("a"); len(s.Cooldowns) != 0 {
		t.Fatalf("cooldowns %+v", s.Cooldowns)
	}
}

// Issue 15, Build: paid extra usage is opt-in.
func TestExtraUsageIsSpentUnlessAllowed(t *testing.T) {
	spentOnExtra := func(now time.Time) classify.Quota {
		return claudeQuota(t, now, 1.0, time.Hour, 0.5, week,
			"anthropic-ratelimit-unified-5h-status: rejected",
			"anthropic-ratelimit-unified-overage-status: allowed",
			"anthropic-ratelimit-unified-overage-in-use: true")
	}
	f := subFixture(t, UsageConfig{}, "a")
	f.p.SetQuota("a", spentOnExtra(f.now()))
	u := f.unavailable("claude-sonnet-4-5")
	if u.NextReady != time.Hour || !strings.Contains(strings.Join(u.Reasons, ";"), "extra usage") {
		t.Fatalf("extra usage not held: %+v", u)
	}

	g := subFixture(t, UsageConfig{AllowExtraUsage: true}, "a")
	g.p.SetQuota("a", spentOnExtra(g.now()))
	g.pick("claude-sonnet-4-5")

	// On extra usage with no plan window to say until when: parked.
	h := subFixture(t, UsageConfig{}, "a")
	hd := http.Header{}
	hd.Set("anthropic-ratelimit-unified-overage-in-use", "true")
	hd.Set("anthropic-ratelimit-unified-overage-status", "allowed")
	q, _ := classify.ReadWindows(hd, h.now())
	h.p.SetQuota("a", q)
	if s := h.status("a"); s.State != api.StateParked || s.Parks[0].Kind != api.ParkPayment {
		t.Fatalf("status %+v", s)
	}
}

// Issue 15, Build: one warning per window crossing warn_at, again only
// after the window came back under it.
func TestWarnOncePerWindow(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	report := func(u5 float64) {
		f.p.SetQuota("a", claudeQuota(t, f.now(), u5, time.Hour, 0.5, week))
	}
	report(0.80)
	report(0.91)
	report(0.95)
	w := f.rec.take(api.EventUsageWarning)
	if len(w) != 1 || w[0].Kind != api.UsageWarnAt || w[0].Window != "5h" || w[0].Used != 0.91 || w[0].Until == nil {
		t.Fatalf("warnings %+v", w)
	}
	if !strings.Contains(w[0].Reason, "5h window at 91%") {
		t.Fatalf("reason %q", w[0].Reason)
	}
	f.clk.Advance(time.Hour)
	report(0.10) // the new window
	report(0.92)
	if w := f.rec.take(api.EventUsageWarning); len(w) != 1 {
		t.Fatalf("second window warnings %+v", w)
	}
	// An API key's buckets never warn.
	f.p.Add(Credential{ID: "k", Provider: "anthropic", Kind: api.KindAPIKey})
	f.p.SetQuota("k", claudeQuota(t, f.now(), 0.99, time.Hour, 0.99, week))
	if w := f.rec.take(api.EventUsageWarning); len(w) != 0 {
		t.Fatalf("API key warned: %+v", w)
	}
}

// usage_updated: at most one per credential per 10 s, unless something
// crossed a threshold.
func TestUsageUpdatedIsThrottled(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "a")
	report := func(u5 float64) {
		f.p.SetQuota("a", claudeQuota(t, f.now(), u5, time.Hour, 0.5, week))
	}
	report(0.1)
	f.clk.Advance(3 * time.Second)
	report(0.2)
	f.clk.Advance(3 * time.Second)
	report(0.3)
	if got := f.rec.take(api.EventUsageUpdated); len(got) != 1 || len(got[0].Windows) != 2 || got[0].Windows[0].Used != 0.1 {
		t.Fatalf("usage_updated %+v", got)
	}
	report(0.95) // crosses warn_at
	if got := f.rec.take(api.EventUsageUpdated); len(got) != 1 || got[0].Windows[0].Used != 0.95 || !got[0].Windows[0].Binding {
		t.Fatalf("crossing: %+v", got)
	}
	f.clk.Advance(10 * time.Second)
	report(0.96)
	if got := f.rec.take(api.EventUsageUpdated); len(got) != 1 {
		t.Fatalf("after 10 s: %+v", got)
	}
	if at := f.p.UsageAt("a"); !at.Equal(f.now()) {
		t.Fatalf("UsageAt = %v", at)
	}
	if w := f.status("a").Usage.Windows; len(w) != 2 || w[0].Name != "5h" || !w[0].Binding || w[1].Name != "7d" {
		t.Fatalf("status windows %+v", w)
	}
}

func TestModelMatches(t *testing.T) {
	for _, c := range []struct {
		model, family string
		want          bool
	}{
		{"claude-sonnet-4-5", "sonnet", true},
		{"claude-sonnet-4-5-20250929", "sonnet", true},
		{"claude-opus-4-5", "sonnet", false},
		{"claude-opusx-1", "opus", false},
		{"GPT-5.3-Codex-Spark", "gpt-5.3-codex-spark", true},
		{"gpt-5.3-codex", "gpt-5.3-codex-spark", false},
		{"sonnet", "sonnet", true},
	} {
		if got := modelMatches(c.model, c.family); got != c.want {
			t.Errorf("modelMatches(%q, %q) = %v", c.model, c.family, got)
		}
	}
}

// A subscription with headroom goes before an API key, whatever the key's
// buckets say: the key's tokens cost money, the subscription's unused
// quota is lost at its reset. Once the subscription is spent, the key
// serves.
func TestSubscriptionBeforeAPIKey(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "sub")
	f.p.Add(Credential{ID: "key", Provider: "anthropic", Kind: api.KindAPIKey})
	f.p.SetQuota("sub", claudeQuota(t, f.now(), 0, time.Hour, 0, week))
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-limit", "50")
	h.Set("anthropic-ratelimit-requests-remaining", "49")
	h.Set("anthropic-ratelimit-requests-reset", f.now().Add(time.Minute).Format(time.RFC3339))
	q, ok := classify.ReadWindows(h, f.now())
	if !ok || len(q.Windows) != 1 {
		t.Fatalf("buckets %+v", q)
	}
	f.p.SetQuota("key", q)
	got := map[string]int{}
	for range 4 {
		got[f.pick("claude-sonnet-4-5")]++
	}
	if got["sub"] != 4 {
		t.Fatalf("picks %v, want the subscription", got)
	}
	f.p.SetQuota("sub", claudeQuota(t, f.now(), 1, time.Hour, 0.2, week))
	if got := f.pick("claude-sonnet-4-5"); got != "key" {
		t.Fatalf("with the subscription spent, picked %s", got)
	}
}

// Anthropic sends its per-minute request and token buckets to
// subscriptions too: a nearly spent bucket is no plan window, and the
// reserve leaves it alone.
func TestReserveIgnoresRequestBuckets(t *testing.T) {
	f := subFixture(t, UsageConfig{Reserve: 10}, "a")
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-limit", "50")
	h.Set("anthropic-ratelimit-requests-remaining", "1")
	h.Set("anthropic-ratelimit-requests-reset", f.now().Add(time.Minute).Format(time.RFC3339))
	q, _ := classify.ReadWindows(h, f.now())
	f.p.SetQuota("a", q)
	if s := f.status("a"); s.ReservedUntil != nil {
		t.Fatalf("held by a request bucket: %+v", s)
	}
	if w := f.rec.take(api.EventUsageWarning); len(w) != 0 {
		t.Fatalf("warned for a request bucket: %+v", w)
	}
}

// A subscription refused for billing ("third-party apps now draw from
// your extra usage") is spent for its plan window, not parked for good:
// the next window may serve again. Without a known window it is parked
// until the person acts, as is any API key.
func TestPaymentRefusalHoldsForThePlanWindow(t *testing.T) {
	f := subFixture(t, UsageConfig{}, "sub", "blind")
	f.p.SetQuota("sub", claudeQuota(t, f.now(), 0.3, 2*time.Hour, 0.1, week))
	f.p.Park("sub", "", api.ParkPayment, "400 subscription needs extra usage for this client")
	st := f.status("sub")
	if len(st.Parks) != 0 || st.State != api.StateCooling || len(st.Cooldowns) != 1 || !st.Cooldowns[0].Until.Equal(f.now().Add(2*time.Hour)) {
		t.Fatalf("sub %+v", st)
	}
	f.p.Park("blind", "", api.ParkPayment, "400 billing")
	if st := f.status("blind"); len(st.Parks) != 1 || st.State != api.StateParked {
		t.Fatalf("blind %+v", st)
	}
	f.clk.Advance(2*time.Hour + time.Second)
	if got := f.pick("m"); got != "sub" {
		t.Fatalf("after the window reset picked %q", got)
	}
}

// The status shape: every window by name, and the shared 5h and 7d
// windows in FiveHour and SevenDay by their length, never their slot. A
// Free plan's weekly window sits in Codex's primary slot; a meter that
// called it the five-hour window showed a spent week as a spent session.
func TestQuotaUtilization(t *testing.T) {
	now := time.Unix(1773832096, 0).UTC()
	h := http.Header{}
	h.Set("x-codex-primary-used-percent", "100")
	h.Set("x-codex-primary-window-minutes", "10080")
	h.Set("x-codex-primary-reset-at", "1773860656")
	q, ok := classify.ReadWindows(h, now)
	if !ok {
		t.Fatal("nothing read")
	}
	u := utilization(q, now)
	if u.FiveHour != nil || u.SevenDay == nil || u.SevenDay.Used != 1 || u.SevenDay.ResetsAt.Unix() != 1773860656 {
		t.Errorf("five hour %+v, seven day %+v", u.FiveHour, u.SevenDay)
	}
	if u.SevenDay.Name != "" || u.SevenDay.Binding {
		t.Errorf("FiveHour and SevenDay carry no name or binding: %+v", u.SevenDay)
	}
	if len(u.Windows) != 1 || u.Windows[0].Name != "7d" || !u.Windows[0].Binding || !u.UpdatedAt.Equal(now) {
		t.Errorf("windows %+v", u.Windows)
	}
	if b, ok := binding(q); !ok || b.Name != "7d" || b.Length != 7*24*time.Hour {
		t.Errorf("binding %+v %v", b, ok)
	}
	raw, err := json.Marshal(u.Windows[0])
	if err != nil || string(raw) != `{"name":"7d","used":1,"resets_at":"2026-03-18T19:04:16Z","binding":true}` {
		t.Errorf("contract shape %s %v", raw, err)
	}
}
