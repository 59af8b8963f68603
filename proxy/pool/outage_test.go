package pool

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// pickLease picks for model and keeps the lease.
func (f *fixture) pickLease(model string) *Lease {
	f.t.Helper()
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: model})
	if err != nil {
		f.t.Fatalf("Pick(%q): %v", model, err)
	}
	return l
}

// Issue 14, observed 11: every credential answers a bare 429 (a
// pool-wide limit, no time given). The ladder's guesses would keep them
// all out for 30 s and more after the limit lifted; instead one request
// every 2 s probes for the whole provider, a refused probe changes
// nothing, and the first 2xx brings every credential back.
func TestGuessedOutageIsProbedEveryTwoSeconds(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b", "c")
	for _, id := range []string{"a", "b", "c"} {
		f.p.CoolDown(id, "", ScopeCredential, 0, "429 bare")
		f.clk.Advance(100 * time.Millisecond)
	}
	f.rec.take()
	// 2 s after the last refusal, not before.
	ch := f.p.Changed()
	u := f.unavailable("m")
	if !u.Probe || u.NextReady != outageProbeEvery-100*time.Millisecond || u.Cooling != 3 {
		t.Fatalf("unavailable %+v, want 3 cooling, a probe in 1.9s", u)
	}
	f.clk.Advance(u.NextReady - time.Millisecond)
	if closed(ch) {
		t.Fatal("woken before the probe slot")
	}
	f.clk.Advance(time.Millisecond)
	if !closed(ch) {
		t.Fatal("not woken at the probe slot")
	}
	// The probe goes to the credential whose guess ends first; the next
	// request waits for the next slot.
	probe := f.pickLease("m")
	if probe.Credential.ID != "a" {
		t.Fatalf("probe on %s, want a (its cooldown ends first)", probe.Credential.ID)
	}
	if u := f.unavailable("m"); !u.Probe || u.NextReady != outageProbeEvery {
		t.Fatalf("right after a probe: %+v, want the next in 2s", u)
	}
	// Refused again: kept, no climb, no event.
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, "429 bare"); !res.Kept || res.Step != 1 {
		t.Fatalf("refused probe: %+v, want kept at step 1", res)
	}
	probe.Release()
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events after a refused probe: %+v", ev)
	}
	// The next slot counts from the refusal; the limit lifts meanwhile.
	f.clk.Advance(outageProbeEvery)
	probe = f.pickLease("m")
	ch = f.p.Changed()
	f.p.Confirm(probe.Credential.ID, "m")
	if !closed(ch) {
		t.Fatal("a confirmed probe did not wake waiters")
	}
	// A probe confirms only the credential it went to (issue 24: a
	// probe's 2xx on one key showed another, just refused, ready again).
	if ev := f.rec.take(api.EventCooldownEnded); len(ev) != 1 || ev[0].CredentialID != probe.Credential.ID {
		t.Fatalf("cooldown_ended events %+v, want one, for the probed credential", ev)
	}
	for _, s := range f.p.Status("anthropic") {
		ready := s.State == api.StateReady && len(s.Cooldowns) == 0 && s.Reason == ""
		if ready != (s.ID == probe.Credential.ID) {
			t.Fatalf("%s after the probe's 2xx: %+v; only %s should be ready", s.ID, s, probe.Credential.ID)
		}
	}
	// The confirmed one serves; the others keep their guesses.
	for range 3 {
		if got := f.pickLease("m").Credential.ID; got != probe.Credential.ID {
			t.Fatalf("pick after the probe = %s, want %s", got, probe.Credential.ID)
		}
	}
}

// Credentials cooling on a time the upstream gave are never probed early,
// so one of them is enough to keep the provider from probing; a busy or a
// usable credential serves without a probe; paused ones do not count.
func TestOutageProbeOnlyWhenEveryCredentialGuesses(t *testing.T) {
	reset := t0.Add(time.Hour)
	tests := []struct {
		name  string
		setup func(f *fixture)
		probe bool
	}{
		{"all guessed", func(f *fixture) {}, true},
		{"one paused, the rest guessed", func(f *fixture) { f.p.Reset("c"); f.p.Pause("c") }, true},
		{"one on an upstream time", func(f *fixture) { f.p.Reset("c"); f.p.CoolDown("c", "", ScopeCredential, time.Minute, "429") }, false},
		{"one on a spent budget", func(f *fixture) { f.p.Reset("c"); f.p.SetBudget("c", "m", 0, reset) }, false},
		{"one busy", func(f *fixture) {
			f.p.Reset("c")
			f.p.Add(Credential{ID: "c", Provider: "anthropic", MaxInFlight: 1})
			f.held, _ = f.p.Acquire("c", "m")
		}, false},
		{"another model's cooldown", func(f *fixture) { f.p.Reset("c"); f.p.CoolDown("c", "opus", ScopeModel, 0, "429") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{}, "a", "b", "c")
			for _, id := range []string{"a", "b", "c"} {
				f.p.CoolDown(id, "", ScopeCredential, 0, "429 bare")
			}
			tt.setup(f)
			f.clk.Advance(outageProbeEvery)
			if tt.name == "another model's cooldown" {
				if got := f.pick("m"); got != "c" {
					t.Fatalf("picked %s, want the usable c", got)
				}
				return
			}
			l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"})
			if (err == nil) != tt.probe {
				t.Fatalf("Pick = %v, %v; want a probe %v", l, err, tt.probe)
			}
			if err == nil && (l.Credential.ID == "c" || !l.outage) {
				t.Fatalf("probe on %s (outage %v), want a or b", l.Credential.ID, l.outage)
			}
		})
	}
}

// A provider probe that is excluded by the request (it already tried that
// credential) goes to another; Explain neither takes the slot nor leases.
func TestOutageProbeRespectsExcludeAndExplain(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	f.p.CoolDown("b", "", ScopeCredential, 0, "429")
	f.clk.Advance(outageProbeEvery)
	req := PickRequest{Provider: "anthropic", Model: "m", Exclude: map[string]bool{"a": true}}
	for range 3 {
		if u := f.p.Explain(req); u != nil {
			t.Fatalf("Explain at the slot = %v, want nil (Pick would probe)", u)
		}
	}
	l, err := f.p.Pick(req)
	if err != nil || l.Credential.ID != "b" {
		t.Fatalf("Pick = %v, %v; want a probe on b", l, err)
	}
	if u := f.p.Explain(req); u == nil || !u.Probe {
		t.Fatalf("Explain after the probe = %v, want the next slot", u)
	}
}
