package pool

import (
	"slices"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// The transition on its own, without a pool: each row is one hit.
func TestLadderAdvance(t *testing.T) {
	l := ladder{steps: []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}, resetAfter: 10 * time.Minute}
	now := t0
	cooling := &cooldown{until: now.Add(20 * time.Second), step: 1}
	ended := &cooldown{until: now, step: 1}
	tests := []struct {
		name       string
		cur        *cooldown
		mem        ladderMem
		retryAfter time.Duration
		want       hit
	}{
		{"first hit is step 1", nil, ladderMem{}, 0,
			hit{until: now.Add(30 * time.Second), step: 1, mem: ladderMem{1, now}}},
		{"hit soon after the last climbs", nil, ladderMem{1, now.Add(-time.Minute)}, 0,
			hit{until: now.Add(time.Minute), step: 2, mem: ladderMem{2, now}}},
		{"past the top the last step repeats", nil, ladderMem{7, now.Add(-time.Minute)}, 0,
			hit{until: now.Add(5 * time.Minute), step: 3, mem: ladderMem{8, now}}},
		{"ResetAfter without a hit starts over", nil, ladderMem{3, now.Add(-10 * time.Minute)}, 0,
			hit{until: now.Add(30 * time.Second), step: 1, mem: ladderMem{1, now}}},
		{"just inside ResetAfter still climbs", nil, ladderMem{3, now.Add(-10*time.Minute + time.Millisecond)}, 0,
			hit{until: now.Add(5 * time.Minute), step: 3, mem: ladderMem{4, now}}},
		{"upstream time replaces the step, shorter", nil, ladderMem{}, 5 * time.Second,
			hit{until: now.Add(5 * time.Second), step: 0, mem: ladderMem{1, now}}},
		{"upstream time replaces the step, longer, uncapped", nil, ladderMem{}, 7999 * time.Second,
			hit{until: now.Add(7999 * time.Second), step: 0, mem: ladderMem{1, now}}},
		// A request sent before the cooldown began comes back 429 during
		// it: the same event.
		{"hit while cooling keeps the cooldown and does not climb", cooling, ladderMem{1, now.Add(-10 * time.Second)}, 0,
			hit{until: cooling.until, step: 1, mem: ladderMem{1, now.Add(-10 * time.Second)}, kept: true}},
		{"shorter upstream time while cooling is kept", cooling, ladderMem{1, now}, 5 * time.Second,
			hit{until: cooling.until, step: 1, mem: ladderMem{1, now}, kept: true}},
		{"longer upstream time while cooling extends, without climbing", cooling, ladderMem{1, now}, time.Minute,
			hit{until: now.Add(time.Minute), step: 0, mem: ladderMem{1, now}, extended: true}},
		// The same reset read a moment later, in whole seconds.
		{"upstream time under a second later while cooling is kept", cooling, ladderMem{1, now}, 20*time.Second + 999*time.Millisecond,
			hit{until: cooling.until, step: 1, mem: ladderMem{1, now}, kept: true}},
		{"upstream time a second later while cooling extends", cooling, ladderMem{1, now}, 21 * time.Second,
			hit{until: now.Add(21 * time.Second), step: 0, mem: ladderMem{1, now}, extended: true}},
		{"a cooldown whose time has come counts as over", ended, ladderMem{1, now.Add(-30 * time.Second)}, 0,
			hit{until: now.Add(time.Minute), step: 2, mem: ladderMem{2, now}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := l.advance(tt.cur, tt.mem, now, tt.retryAfter)
			if got != tt.want {
				t.Errorf("advance = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Scenario 1: the upstream's reset time wins over the ladder.
func TestRetryAfterReplacesLadderStep(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	res := f.p.CoolDown("a", "", ScopeCredential, 5*time.Second, "429 rate_limit_error")
	want := CooldownResult{Until: t0.Add(5 * time.Second), Step: 0, Steps: 3, Scope: ScopeCredential, Started: true}
	if res != want {
		t.Fatalf("CoolDown = %+v, want %+v", res, want)
	}
	f.clk.Advance(5*time.Second - time.Millisecond)
	f.unavailable("m")
	f.clk.Advance(time.Millisecond)
	if got := f.pick("m"); got != "a" {
		t.Fatalf("after 5s picked %q, want a", got)
	}
	// The upstream-timed hit counted: the next one without a hint is step 2.
	res = f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	if res.Step != 2 || res.Until != f.now().Add(time.Minute) {
		t.Fatalf("next hit = step %d until +%s, want step 2 until +1m", res.Step, res.Until.Sub(f.now()))
	}
}

// Scenario 2: 30 s, 60 s, 5 m, 5 m …, and back to 30 s after 10 m quiet.
func TestLadderClimbsAndStartsOverAfterQuiet(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	for i, want := range []struct {
		d    time.Duration
		step int
	}{{30 * time.Second, 1}, {time.Minute, 2}, {5 * time.Minute, 3}, {5 * time.Minute, 3}} {
		res := f.p.CoolDown("a", "", ScopeCredential, 0, "429")
		if got := res.Until.Sub(f.now()); got != want.d || res.Step != want.step || res.Kept {
			t.Fatalf("hit %d: cooldown %s step %d kept %v, want %s step %d", i+1, got, res.Step, res.Kept, want.d, want.step)
		}
		f.clk.Advance(want.d)
		if got := f.pick("m"); got != "a" {
			t.Fatalf("hit %d: not usable once the cooldown ran out", i+1)
		}
	}
	// The last hit was 5 m ago; 5 m more makes ResetAfter without a hit.
	f.clk.Advance(5*time.Minute - time.Millisecond)
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, "429"); res.Step != 3 {
		t.Fatalf("hit 1ms before ResetAfter: step %d, want 3", res.Step)
	}
	f.clk.Advance(10 * time.Minute)
	res := f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	if res.Step != 1 || res.Until.Sub(f.now()) != 30*time.Second {
		t.Fatalf("hit after 10m quiet: step %d for %s, want step 1 for 30s", res.Step, res.Until.Sub(f.now()))
	}
}

func TestLadderIsConfigurable(t *testing.T) {
	f := newFixture(t, Config{Ladder: []time.Duration{ms(100), 0, ms(200)}, ResetAfter: time.Second}, "a")
	var got []time.Duration
	for range 3 {
		res := f.p.CoolDown("a", "", ScopeCredential, 0, "")
		got = append(got, res.Until.Sub(f.now()))
		if res.Steps != 2 {
			t.Fatalf("Steps = %d, want 2 (the zero step dropped)", res.Steps)
		}
		f.clk.Advance(res.Until.Sub(f.now()))
	}
	want := []time.Duration{ms(100), ms(200), ms(200)}
	if !slices.Equal(got, want) {
		t.Fatalf("cooldowns %v, want %v", got, want)
	}
	f.clk.Advance(time.Second)
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, ""); res.Step != 1 {
		t.Fatalf("after ResetAfter step %d, want 1", res.Step)
	}
}

// Scenario 2, per model: each model climbs its own ladder, and a model
// cooldown blocks that model only.
func TestModelCooldownIsPerModel(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	for i, want := range []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute} {
		res := f.p.CoolDown("a", "opus", ScopeModel, 0, "model limit")
		if res.Scope != ScopeModel || res.Until.Sub(f.now()) != want {
			t.Fatalf("opus hit %d: %s %s, want model %s", i+1, res.Scope, res.Until.Sub(f.now()), want)
		}
		if i < 2 {
			f.clk.Advance(want)
		}
	}
	// opus is cooling 5m, on a guess: its next probe is the wait;
	// sonnet and model-less requests are not affected.
	if u := f.unavailable("opus"); u.Cooling != 1 || u.NextReady != outageProbeEvery || !u.Probe {
		t.Fatalf("opus: %+v, want 1 cooling, the next probe in 2s", u)
	}
	if got := f.pick("sonnet"); got != "a" {
		t.Fatal("sonnet blocked by opus's cooldown")
	}
	if got := f.pick(""); got != "a" {
		t.Fatal("a model-less request blocked by opus's cooldown")
	}
	if s := f.status("a"); s.State != api.StateReady || len(s.Cooldowns) != 1 || s.Cooldowns[0].Model != "opus" {
		t.Fatalf("status %+v, want ready with one opus cooldown", s)
	}
	// sonnet's first hit starts at the bottom of its own ladder, and the
	// credential's own ladder is untouched too.
	if res := f.p.CoolDown("a", "sonnet", ScopeModel, 0, ""); res.Step != 1 || res.Until.Sub(f.now()) != 30*time.Second {
		t.Fatalf("sonnet first hit: step %d, want 1 for 30s", res.Step)
	}
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, ""); res.Step != 1 {
		t.Fatalf("credential first hit: step %d, want 1", res.Step)
	}
	// A model scope without a model is the credential's.
	if res := f.p.CoolDown("a", "", ScopeModel, 0, ""); res.Scope != ScopeCredential || !res.Kept {
		t.Fatalf("model scope without model = %+v, want the (cooling) credential key", res)
	}
}

// Parallel requests on one credential all come back 429 together; that is
// one limit, not three, so it must not buy the top of the ladder at once.
func TestConcurrentHitsDoNotClimb(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	first := f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	f.clk.Advance(ms(10))
	for range 2 {
		res := f.p.CoolDown("a", "", ScopeCredential, 0, "429")
		if !res.Kept || res.Until != first.Until || res.Step != 1 {
			t.Fatalf("straggler = %+v, want kept at %v step 1", res, first.Until)
		}
	}
	if n := len(f.rec.take(api.EventCooldownStarted)); n != 1 {
		t.Fatalf("%d cooldown_started events, want 1", n)
	}
	f.clk.AdvanceTo(first.Until)
	if res := f.p.CoolDown("a", "", ScopeCredential, 0, "429"); res.Step != 2 {
		t.Fatalf("next real hit step %d, want 2", res.Step)
	}
}

// Scenario 4: a later, shorter cooldown never shortens a longer one.
func TestCooldownNeverShortened(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	long := f.p.CoolDown("a", "", ScopeCredential, 5*time.Minute, "usage limit, resets in 5m")
	f.clk.Advance(time.Second)
	for _, ra := range []time.Duration{5 * time.Second, 0} {
		res := f.p.CoolDown("a", "", ScopeCredential, ra, "short")
		if !res.Kept || res.Until != long.Until {
			t.Fatalf("retryAfter %s: %+v, want kept until %v", ra, res, long.Until)
		}
	}
	if cd := f.status("a").Cooldowns; len(cd) != 1 || cd[0].Until != long.Until || cd[0].Reason != "usage limit, resets in 5m" {
		t.Fatalf("cooldowns %+v, want the 5m one unchanged", cd)
	}
	// A longer upstream time does extend it.
	res := f.p.CoolDown("a", "", ScopeCredential, 10*time.Minute, "longer")
	if res.Kept || res.Until != f.now().Add(10*time.Minute) || res.Step != 0 {
		t.Fatalf("longer hit = %+v, want extended to +10m step 0", res)
	}
	// The old timer must not end the extended cooldown at the old time.
	f.clk.AdvanceTo(long.Until)
	if u := f.unavailable("m"); u.NextReady != res.Until.Sub(f.now()) {
		t.Fatalf("after the old until: next ready %s, want %s", u.NextReady, res.Until.Sub(f.now()))
	}
	if ev := f.rec.take(api.EventCooldownEnded); len(ev) != 0 {
		t.Fatalf("cooldown_ended at the replaced time: %+v", ev)
	}
}

// Scenario 3: on an egress provider one 429 cools every credential, as one
// cooldown on the provider.
func TestEgressHitCoolsEverySibling(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b", "c")
	f.p.SetProvider("anthropic", LimitEgress)
	res := f.p.CoolDown("b", "", ScopeCredential, 0, "429 from shared IP")
	if res.Scope != ScopeProvider || res.Step != 1 || res.Until != t0.Add(30*time.Second) {
		t.Fatalf("CoolDown = %+v, want provider scope step 1 for 30s", res)
	}
	// Every credential cooling on a guess: the wait is for the next
	// probe of the provider (outage_test.go), not the step's end.
	u := f.unavailable("m")
	if u.Total != 3 || u.Cooling != 3 || !u.HasNext || u.NextReady != outageProbeEvery || !u.Probe {
		t.Fatalf("Unavailable = %+v, want 3 of 3 cooling, next probe in 2s", u)
	}
	if got, want := u.Error(), "every anthropic credential is cooling down for m on a guessed time; the next probe of the limit goes in 2s"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if d, ok := nextReady(f.p, "anthropic", "m"); !ok || d != outageProbeEvery {
		t.Fatalf("NextReady = %s %v, want 2s true", d, ok)
	}
	pc := f.p.ProviderCooldown("anthropic")
	if pc == nil || pc.Scope != "provider" || pc.Until != res.Until || pc.Step != 1 || pc.Steps != 3 {
		t.Fatalf("ProviderCooldown = %+v", pc)
	}
	for _, s := range f.p.Status("anthropic") {
		if s.State != api.StateCooling || len(s.Cooldowns) != 1 || s.Cooldowns[0].Scope != "provider" {
			t.Fatalf("%s status %+v, want cooling by the provider cooldown", s.ID, s)
		}
	}
	// One entry, so one event each way, naming no credential.
	ev := f.rec.take(api.EventCooldownStarted)
	if len(ev) != 1 || ev[0].CredentialID != "" || ev[0].Provider != "anthropic" || ev[0].Scope != "provider" {
		t.Fatalf("cooldown_started = %+v, want one provider-wide event", ev)
	}
	// A sibling's straggler 429 is the same event.
	if r := f.p.CoolDown("c", "", ScopeCredential, 0, "429"); !r.Kept {
		t.Fatalf("sibling straggler = %+v, want kept", r)
	}
	f.clk.Advance(30 * time.Second)
	if ev := f.rec.take(api.EventCooldownEnded); len(ev) != 1 || ev[0].CredentialID != "" {
		t.Fatalf("cooldown_ended = %+v, want one provider-wide event", ev)
	}
	if f.p.ProviderCooldown("anthropic") != nil {
		t.Fatal("provider cooldown still reported after it ended")
	}
	for _, want := range []string{"a", "b", "c"} {
		if got := f.pick("m"); got != want {
			t.Fatalf("picked %s, want %s", got, want)
		}
	}
}

// The provider cooldown is a separate key: it neither shortens a sibling's
// own longer cooldown nor is needed for a per-credential provider.
func TestProviderScopeKeepsLongerSiblingCooldown(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	long := f.p.CoolDown("a", "", ScopeCredential, 10*time.Minute, "a's own limit")
	if r := f.p.CoolDown("b", "", ScopeCredential, 0, "429"); r.Scope != ScopeCredential {
		t.Fatalf("credential-limit provider cooled %s", r.Scope)
	}
	// The classifier may still call a hit provider-wide explicitly.
	pr := f.p.CoolDown("b", "", ScopeProvider, 0, "egress")
	if pr.Scope != ScopeProvider || pr.Step != 1 {
		t.Fatalf("explicit provider scope = %+v", pr)
	}
	f.clk.AdvanceTo(pr.Until)
	if s := f.status("a"); s.State != api.StateCooling || len(s.Cooldowns) != 1 || s.Cooldowns[0].Until != long.Until {
		t.Fatalf("a after the provider cooldown: %+v, want still cooling until its own time", s)
	}
	for range 2 {
		if got := f.pick(""); got != "b" {
			t.Fatalf("picked %s, want b", got)
		}
	}
}

func TestCoolDownUnknownCredential(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	if res := f.p.CoolDown("nope", "", ScopeCredential, 0, ""); res != (CooldownResult{}) {
		t.Fatalf("CoolDown(unknown) = %+v, want zero", res)
	}
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events for an unknown credential: %+v", ev)
	}
}

// On a real clock a timer can fire while install is stopping it; the
// late callback must leave the newer cooldown alone.
func TestLateTimerLeavesNewerCooldownAlone(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.p.CoolDown("a", "", ScopeCredential, time.Minute, "")
	old := f.p.byID["a"].cool
	f.clk.Advance(time.Minute)
	f.p.CoolDown("a", "", ScopeCredential, time.Hour, "") // the old one ended; a new one starts
	f.rec.take()
	f.p.end(key{cred: f.p.byID["a"]}, old)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("late timer emitted %+v", ev)
	}
	if s := f.status("a"); s.State != api.StateCooling {
		t.Fatalf("late timer ended the newer cooldown: %+v", s)
	}
}
