package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Scenario 5: a plan that lacks one model parks that model only.
func TestPaymentParkForModelSkipsOnlyThatModel(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.Park("a", "opus", api.ParkPayment, "plan does not include opus")
	for range 3 {
		if got := f.pick("opus"); got != "b" {
			t.Fatalf("opus picked %s, want b", got)
		}
	}
	if got := []string{f.pick("sonnet"), f.pick("sonnet")}; got[0] == got[1] {
		t.Fatalf("sonnet picks %v: a should still serve other models", got)
	}
	if s := f.status("a"); s.State != api.StateReady || len(s.Parks) != 1 || s.Parks[0].Model != "opus" || s.Parks[0].Since != t0 {
		t.Fatalf("status %+v, want ready with one opus park", s)
	}
	// With b gone too, opus has nothing that time will fix.
	f.p.Park("b", "opus", api.ParkPayment, "plan does not include opus")
	u := f.unavailable("opus")
	if u.Parked != 2 || u.HasNext {
		t.Fatalf("Unavailable = %+v, want 2 parked and no next", u)
	}
	want := "no anthropic credential can take a request for opus now: " +
		"a: plan or billing does not cover opus (plan does not include opus); " +
		"b: plan or billing does not cover opus (plan does not include opus)"
	if u.Error() != want {
		t.Fatalf("Error() = %q\nwant      %q", u.Error(), want)
	}
	if d, ok := nextReady(f.p, "anthropic", "opus"); ok || d != 0 {
		t.Fatalf("NextReady = %s %v, want 0 false", d, ok)
	}
}

func TestWholeCredentialParkSkipsEveryModel(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.Park("a", "", api.ParkPayment, "billing: spend cap reached")
	for _, m := range []string{"opus", "sonnet", ""} {
		if got := f.pick(m); got != "b" {
			t.Fatalf("%q picked %s, want b", m, got)
		}
	}
	if s := f.status("a"); s.State != api.StateParked {
		t.Fatalf("state %s, want parked", s.State)
	}
	// A park is not a cooldown: no time ends it.
	f.clk.Advance(24 * time.Hour)
	if got := f.pick("opus"); got != "b" {
		t.Fatalf("after a day picked %s, want b", got)
	}
}

// A park neither reads nor writes the ladder: the first rate limit after
// one is still step 1.
func TestParkLeavesLadderAlone(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.p.Park("a", "opus", api.ParkPayment, "x")
	f.p.Park("a", "", api.ParkRelogin, "y")
	if st := f.p.State(); len(st.Credentials["a"].Ladders) != 0 || len(st.Credentials["a"].Cooldowns) != 0 {
		t.Fatalf("park wrote ladder or cooldown state: %+v", st.Credentials["a"])
	}
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, ""); res.Step != 1 {
		t.Fatalf("first hit after parks: step %d, want 1", res.Step)
	}
}

// Reset clears payment parks, every cooldown and the ladder, at once; a
// re-login park stays until a login.
func TestResetClearsPaymentParksCooldownsAndLadder(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	f.p.CoolDown("a", "opus", ScopeModel, time.Hour, "model limit")
	f.p.CoolDown("a", "", ScopeProvider, 0, "egress")
	f.p.Park("a", "opus", api.ParkPayment, "plan")
	f.p.Park("a", "", api.ParkPayment, "billing")
	f.p.Park("a", "", api.ParkRelogin, "revoked")
	f.rec.take()

	if err := f.p.Reset("a"); err != nil {
		t.Fatal(err)
	}
	s := f.status("a")
	if len(s.Cooldowns) != 0 || len(s.Parks) != 1 || s.Parks[0].Kind != api.ParkRelogin || s.State != api.StateParked {
		t.Fatalf("after Reset: %+v, want no cooldowns and only the relogin park", s)
	}
	if f.p.ProviderCooldown("anthropic") != nil {
		t.Fatal("provider cooldown survived Reset")
	}
	ended := f.rec.take(api.EventCooldownEnded)
	if len(ended) != 3 || ended[0].Scope != "provider" || ended[1].Scope != "credential" || ended[2].Model != "opus" {
		t.Fatalf("cooldown_ended events %+v, want provider, credential, opus", ended)
	}
	f.p.Unpark("a")
	if got := f.pick("opus"); got != "a" {
		t.Fatal("not usable after Reset and Unpark")
	}
	// The ladder starts over: the next hit is step 1, not 2.
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, ""); res.Step != 1 {
		t.Fatalf("after Reset step %d, want 1", res.Step)
	}
	// The timers of cleared cooldowns must not fire anything later.
	f.rec.take()
	f.clk.Advance(2 * time.Hour)
	if ev := f.rec.take(api.EventCooldownEnded); len(ev) != 1 || ev[0].Scope != "credential" {
		t.Fatalf("cooldown_ended %+v, want only the new credential cooldown's", ev)
	}
	if err := f.p.Reset("nope"); err != ErrUnknown {
		t.Fatalf("Reset(unknown) = %v, want ErrUnknown", err)
	}
}

func TestReloginParkEmitsReloginRequiredOnce(t *testing.T) {
	f := newFixture(t, Config{}, "max")
	f.p.Add(Credential{ID: "max", Provider: "anthropic", Label: "Max", Kind: api.KindOAuth, Source: "claude-code"})
	f.rec.take()
	f.p.Park("max", "", api.ParkRelogin, "refresh token reused")
	f.p.Park("max", "", api.ParkRelogin, "refresh token reused")
	// A login is never per model: this is the same park.
	f.p.Park("max", "opus", api.ParkRelogin, "invalid_grant")
	ev := f.rec.take()
	if len(ev) != 2 || ev[0].Type != api.EventParked || ev[1].Type != api.EventReloginRequired {
		t.Fatalf("events %+v, want parked then relogin_required, once", ev)
	}
	p := ev[0]
	if p.CredentialID != "max" || p.Provider != "anthropic" || p.Label != "Max" || p.Kind != api.ParkRelogin ||
		p.Model != "" || p.Reason != "refresh token reused" || p.State != api.StateParked || p.Time != t0 {
		t.Fatalf("parked event %+v", p)
	}
	if r := ev[1]; r.CredentialID != "max" || r.Reason != "refresh token reused" {
		t.Fatalf("relogin_required event %+v", r)
	}
	s := f.status("max")
	if len(s.Parks) != 1 || s.Parks[0].Reason != "invalid_grant" {
		t.Fatalf("parks %+v, want one, with the latest reason", s.Parks)
	}
	u := f.unavailable("opus")
	want := "no anthropic credential can take a request for opus now: Max: log in again in claude-code, then subpool import claude-code (invalid_grant)"
	if u.Error() != want {
		t.Fatalf("Error() = %q\nwant      %q", u.Error(), want)
	}
}

func TestUnparkClearsEveryPark(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.p.Park("a", "", api.ParkRelogin, "revoked")
	f.p.Park("a", "opus", api.ParkPayment, "plan")
	f.rec.take()
	f.p.Unpark("a")
	f.p.Unpark("a") // nothing left: no second event
	ev := f.rec.take()
	if len(ev) != 1 || ev[0].Type != api.EventCredentialUpdated || ev[0].State != api.StateReady {
		t.Fatalf("events %+v, want one credential_updated ready", ev)
	}
	if got := f.pick("opus"); got != "a" {
		t.Fatal("not usable after Unpark")
	}
}

// Unpark of one kind leaves the others: a login that came back does not
// clear what billing said about a model.
func TestUnparkOneKind(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.Park("a", "", api.ParkRelogin, "revoked")
	f.p.Park("a", "opus", api.ParkPayment, "plan lacks opus")
	f.rec.take()
	f.p.Unpark("a", api.ParkPayment, "other") // the payment park goes
	f.p.Unpark("a", api.ParkRelogin)
	f.p.Unpark("a", api.ParkRelogin) // nothing of that kind left: no event
	if ev := f.rec.take(); len(ev) != 2 || ev[1].Type != api.EventCredentialUpdated || ev[1].State != api.StateReady {
		t.Fatalf("events %+v, want two credential_updated, then ready", ev)
	}

	f.p.Park("a", "", api.ParkRelogin, "revoked")
	f.p.Park("a", "opus", api.ParkPayment, "plan lacks opus")
	f.p.Unpark("a", api.ParkRelogin)
	s := f.status("a")
	if len(s.Parks) != 1 || s.Parks[0].Kind != api.ParkPayment || s.Reason != "plan lacks opus" {
		t.Fatalf("status %+v, want only the payment park left", s)
	}
	if got := f.pick("sonnet"); got != "a" && got != "b" {
		t.Fatalf("picked %q", got)
	}
	for range 3 {
		if got := f.pick("opus"); got != "b" {
			t.Fatalf("opus went to %q while a's plan lacks it", got)
		}
	}
}

// One region refusal parks every credential sharing the egress: with no
// credential proxy of its own, that is the provider; the parked events go
// out once each and the answer names the setting.
func TestRegionParkTakesEveryCredentialOfTheSharedEgress(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.Park("a", "", api.ParkRegion, "403 unsupported_country_region_territory")
	if evs := f.rec.take(api.EventParked); len(evs) != 2 || evs[0].Kind != api.ParkRegion || evs[1].CredentialID != "b" {
		t.Fatalf("parked events %+v, want a and b parked for region", evs)
	}
	u := f.unavailable("")
	if u.Parked != 2 || u.HasNext {
		t.Fatalf("Unavailable = %+v, want 2 parked, no next", u)
	}
	if !strings.Contains(u.Error(), "set [network] proxy") {
		t.Fatalf("Error() = %q, want the advice to set [network] proxy", u.Error())
	}
	// Parking again (a request in flight meanwhile) tells nobody twice.
	f.p.Park("b", "", api.ParkRegion, "403 unsupported_country_region_territory")
	if evs := f.rec.take(api.EventParked); len(evs) != 0 {
		t.Fatalf("parked again: %+v", evs)
	}
	f.p.UnparkEgress("")
	if got := f.pick(""); got != "a" && got != "b" {
		t.Fatalf("picked %q after the egress changed", got)
	}
	if evs := f.rec.take(api.EventCredentialUpdated); len(evs) != 2 {
		t.Fatalf("credential_updated %+v, want one per unparked credential", evs)
	}
}

// A credential with its own proxy leaves from elsewhere: a region refusal
// of the shared egress leaves it serving, and one of its own proxy parks
// it alone, until its proxy changes.
func TestRegionParkSparesAnotherEgress(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.Add(Credential{ID: "c", Provider: "anthropic", Label: "c", Kind: api.KindAPIKey, Egress: "socks5://10.0.0.1:1080"})
	f.p.Park("a", "", api.ParkRegion, "region")
	for range 3 {
		if got := f.pick(""); got != "c" {
			t.Fatalf("picked %s, want c, whose proxy is elsewhere", got)
		}
	}
	f.p.UnparkEgress("")
	f.p.Park("c", "", api.ParkRegion, "region")
	if s := f.status("c"); s.State != api.StateParked || s.Proxy != "socks5://10.0.0.1:1080" {
		t.Fatalf("c: %+v, want parked, proxy shown", s)
	}
	if s := f.status("a"); s.State != api.StateReady {
		t.Fatalf("a: %+v, want ready: c's proxy is not a's egress", s)
	}
	f.p.UnparkEgress("") // the shared egress changing is not c's
	if s := f.status("c"); s.State != api.StateParked {
		t.Fatalf("c unparked by another egress: %+v", s)
	}
	f.p.Add(Credential{ID: "c", Provider: "anthropic", Label: "c", Kind: api.KindAPIKey, Egress: "http://10.0.0.2:3128"})
	if s := f.status("c"); s.State != api.StateReady || len(s.Parks) != 0 {
		t.Fatalf("c after a new proxy: %+v, want ready", s)
	}
}
