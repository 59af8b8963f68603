package pool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Scenario 9: what is worth keeping survives a restart through JSON; what
// ran out meanwhile, and credentials no longer held, do not.
func TestStateRoundTripThroughJSON(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b", "gone")
	f.p.Add(Credential{ID: "z1", Provider: "zai"})
	f.p.SetProvider("zai", LimitEgress)

	f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	f.clk.Advance(30 * time.Second)
	aCool := f.p.CoolDown("a", "", ScopeCredential, 0, "429 again") // step 2, 60s
	f.p.CoolDown("a", "opus", ScopeModel, time.Hour, "opus weekly limit")
	f.p.Park("a", "haiku", api.ParkPayment, "plan lacks haiku")
	f.p.Pause("b")
	f.p.CoolDown("b", "", ScopeCredential, 10*time.Second, "short")
	f.p.CoolDown("gone", "", ScopeCredential, 0, "429")
	zCool := f.p.CoolDown("z1", "", ScopeCredential, 2*time.Hour, "egress 429")
	f.p.Record("a", true, false)
	saved := f.now()

	data, err := json.Marshal(f.p.State())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"version":1`) || !strings.Contains(string(data), `"counters":{"requests":1`) {
		t.Fatalf("state JSON %s: want a version and a's counters", data)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}

	// The restart: a new pool 15s later that no longer holds "gone".
	p, rec, clk := restartFrom(t, saved.Add(15*time.Second), st)

	ss := p.Status("")
	a, b := ss[0], ss[1]
	wantA := []api.Cooldown{
		{Scope: "credential", Until: aCool.Until, Step: 2, Steps: 3, Reason: "429 again"},
		{Scope: "model", Model: "opus", Until: saved.Add(time.Hour), Step: 0, Steps: 3, Reason: "opus weekly limit"},
	}
	if a.State != api.StateCooling || !sameCooldowns(a.Cooldowns, wantA) {
		t.Fatalf("a restored as %s %+v\nwant cooling %+v", a.State, a.Cooldowns, wantA)
	}
	if len(a.Parks) != 1 || a.Parks[0].Model != "haiku" || a.Parks[0].Since != saved {
		t.Fatalf("a parks %+v", a.Parks)
	}
	// The usage counters survive a restart, as CONTRACT.md says the state
	// file keeps them (issue 27: they were reset on every restart).
	if a.Counters != (api.Counters{Requests: 1}) {
		t.Fatalf("a's counters restored as %+v, want 1 request", a.Counters)
	}
	if b.State != api.StatePaused || len(b.Cooldowns) != 0 {
		t.Fatalf("b restored as %s %+v, want paused with its expired cooldown dropped", b.State, b.Cooldowns)
	}
	if pc := p.ProviderCooldown("zai"); pc == nil || pc.Until != zCool.Until || pc.Reason != "egress 429" {
		t.Fatalf("zai cooldown %+v", pc)
	}
	if _, ok := p.State().Credentials["gone"]; ok {
		t.Fatal("state for an unknown credential was kept")
	}

	// Restored cooldowns end live like any other.
	clk.AdvanceTo(aCool.Until)
	if ev := rec.take(api.EventCooldownEnded); len(ev) != 1 || ev[0].CredentialID != "a" || ev[0].Scope != "credential" {
		t.Fatalf("cooldown_ended %+v", ev)
	}
	// Ladder memory survived: a's next hit is step 3, and b, whose
	// cooldown was dropped, still remembers its hit.
	if r := p.CoolDown("a", "", ScopeCredential, 0, ""); r.Step != 3 || r.Until.Sub(clk.Now()) != 5*time.Minute {
		t.Fatalf("a after restore: step %d, want 3 for 5m", r.Step)
	}
	if r := p.CoolDown("b", "", ScopeCredential, 0, ""); r.Step != 2 {
		t.Fatalf("b after restore: step %d, want 2", r.Step)
	}
}

// restartFrom is the restart of TestStateRoundTripThroughJSON: a new
// pool at now holding a, b and z1, restored from st without an event.
func restartFrom(t *testing.T, now time.Time, st State) (*Pool, *recorder, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(now)
	rec := &recorder{}
	p := New(clk, Config{}, rec)
	for _, id := range []string{"a", "b"} {
		p.Add(Credential{ID: id, Provider: "anthropic"})
	}
	p.Add(Credential{ID: "z1", Provider: "zai"})
	p.SetProvider("zai", LimitEgress)
	rec.take()
	if err := p.Restore(st); err != nil {
		t.Fatal(err)
	}
	if ev := rec.take(); len(ev) != 0 {
		t.Fatalf("Restore emitted %+v", ev)
	}
	return p, rec, clk
}

func sameCooldowns(a, b []api.Cooldown) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Until.Equal(y.Until) {
			return false
		}
		x.Until, y.Until = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

func TestStateLeavesOutWhatNoLongerMatters(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	if st := f.p.State(); st.Version != StateVersion || len(st.Credentials) != 0 || len(st.Providers) != 0 {
		t.Fatalf("fresh pool state %+v, want only the version", st)
	}
	f.p.CoolDown("a", "m", ScopeModel, 0, "")
	f.p.CoolDown("a", "", ScopeProvider, 0, "")
	st := f.p.State()
	if cs := st.Credentials["a"]; len(cs.Cooldowns) != 1 || len(cs.Ladders) != 1 || cs.Ladders[0].Scope != ScopeModel || cs.Ladders[0].Hits != 1 {
		t.Fatalf("state %+v", cs)
	}
	if ps := st.Providers["anthropic"]; ps.Cooldown == nil || ps.Ladder == nil || ps.Ladder.Hits != 1 {
		t.Fatalf("provider state %+v", ps)
	}
	f.clk.Advance(30 * time.Second)
	if cs := f.p.State().Credentials["a"]; len(cs.Cooldowns) != 0 || len(cs.Ladders) != 1 {
		t.Fatalf("after the cooldown: %+v, want the ladder only", cs)
	}
	f.clk.Advance(10 * time.Minute)
	if st := f.p.State(); len(st.Credentials) != 0 || len(st.Providers) != 0 {
		t.Fatalf("after ResetAfter: %+v, want nothing", st)
	}
}

func TestRestoreRefusesUnknownVersion(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	err := f.p.Restore(State{Version: 2, Credentials: map[string]CredentialState{"a": {Paused: true}}})
	if !errors.Is(err, ErrStateVersion) {
		t.Fatalf("Restore(v2) = %v", err)
	}
	if f.status("a").State != api.StateReady {
		t.Fatal("a state of an unknown version was applied")
	}
	if err := f.p.Restore(State{}); err != nil {
		t.Fatalf("Restore(zero State) = %v, want nil: no state file yet is not an error", err)
	}
	if err := f.p.Restore(State{Credentials: map[string]CredentialState{"a": {Paused: true}}}); !errors.Is(err, ErrStateVersion) {
		t.Fatalf("Restore(v0 with content) = %v", err)
	}
}

// Restore never shortens a cooldown the pool already holds.
func TestRestoreKeepsLongerCooldown(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	long := f.p.CoolDown("a", "", ScopeCredential, time.Hour, "")
	err := f.p.Restore(State{Version: StateVersion, Credentials: map[string]CredentialState{"a": {
		Cooldowns: []CooldownState{{Scope: ScopeCredential, Until: t0.Add(time.Minute), Step: 1}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if cd := f.status("a").Cooldowns; len(cd) != 1 || cd[0].Until != long.Until {
		t.Fatalf("cooldowns %+v, want the hour kept", cd)
	}
}
