package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// hold picks for model "m" and keeps the lease.
func (f *fixture) hold() *Lease {
	f.t.Helper()
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"})
	if err != nil {
		f.t.Fatalf("Pick: %v", err)
	}
	return l
}

// A budget reported spent keeps the credential out until its reset, as a
// cooldown would: NextReady is the reset, Status and the events show it,
// and the end goes out live.
func TestSpentBudgetCoolsUntilReset(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	reset := t0.Add(40 * time.Second)
	f.p.SetBudget("a", 0, reset)
	why := "budget spent (0 requests left until 12:00:40)"
	want := api.Event{Type: api.EventCooldownStarted, Time: t0, Provider: "anthropic", CredentialID: "a", Label: "a",
		Reason: why, Until: &reset, Steps: 3, Scope: "credential"}
	if ev := f.rec.take(); len(ev) != 1 || !sameEvent(ev[0], want) {
		t.Fatalf("events %+v\nwant %+v", ev, want)
	}
	for range 3 {
		if got := f.pick("m"); got != "b" {
			t.Fatalf("picked %s, want b", got)
		}
	}
	if l, err := f.p.Acquire("a", "m"); err == nil {
		l.Release()
		t.Fatal("Acquire handed out the spent credential")
	}

	f.p.Pause("b")
	f.rec.take()
	u := f.unavailable("m")
	if u.Cooling != 1 || u.Paused != 1 || !u.HasNext || u.NextReady != 40*time.Second {
		t.Fatalf("%+v, want a cooling 40s", u)
	}
	if !strings.Contains(u.Error(), "a: cooling 40s ("+why+")") {
		t.Fatalf("Error() = %q", u.Error())
	}
	if d, ok := f.p.NextReady("anthropic", "m"); !ok || d != 40*time.Second {
		t.Fatalf("NextReady = %v %v, want 40s", d, ok)
	}
	s := f.status("a")
	wantCD := api.Cooldown{Scope: "credential", Until: reset, Steps: 3, Reason: why}
	if s.State != api.StateCooling || len(s.Cooldowns) != 1 || s.Cooldowns[0] != wantCD {
		t.Fatalf("status %s %+v, want cooling %+v", s.State, s.Cooldowns, wantCD)
	}
	// Nothing went wrong, so nothing is worth keeping across a restart.
	if cs, ok := f.p.State().Credentials["a"]; ok {
		t.Fatalf("state keeps %+v", cs)
	}

	f.clk.Advance(40*time.Second - time.Millisecond)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events before the reset: %+v", ev)
	}
	f.unavailable("m")
	f.clk.Advance(time.Millisecond)
	want = api.Event{Type: api.EventCooldownEnded, Time: reset, Provider: "anthropic", CredentialID: "a", Label: "a",
		Reason: why, Scope: "credential"}
	if ev := f.rec.take(); len(ev) != 1 || !sameEvent(ev[0], want) {
		t.Fatalf("events %+v\nwant %+v", ev, want)
	}
	if got := f.pick("m"); got != "a" {
		t.Fatalf("after the reset picked %s, want a", got)
	}
	if s := f.status("a"); s.State != api.StateReady || len(s.Cooldowns) != 0 {
		t.Fatalf("after the reset %s %+v", s.State, s.Cooldowns)
	}
}

// Leases after a report count against it, held or already released; the
// one that spends it starts the cooldown, once.
func TestBudgetCountsLeases(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	f.p.SetBudget("a", 2, reset)
	held := f.hold()
	f.pick("m")
	if ev := f.rec.take(api.EventCooldownStarted); len(ev) != 1 || ev[0].Until == nil || !ev[0].Until.Equal(reset) {
		t.Fatalf("cooldown events %+v, want one until the reset", ev)
	}
	u := f.unavailable("m")
	if u.Cooling != 1 || u.NextReady != time.Minute {
		t.Fatalf("third request: %+v, want cooling 1m", u)
	}
	held.Release()
	f.clk.Advance(30 * time.Second)
	if u := f.unavailable("m"); u.NextReady != 30*time.Second {
		t.Fatalf("after a release and 30s: %+v", u)
	}
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events while spent: %+v", ev)
	}
}

// A report arriving while other attempts on the credential await their
// answers may not count them: they come off what it says.
func TestReportCountsAttemptsStillUnanswered(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	var out []*Lease
	for range 3 {
		out = append(out, f.hold())
	}
	// The first attempt's answer: 5 left, not counting the other two.
	f.p.SetBudget("a", 5, t0.Add(time.Minute))
	for i := range 3 {
		if _, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"}); err != nil {
			t.Fatalf("lease %d of the 3 left: %v", i+1, err)
		}
	}
	f.unavailable("m")
	for _, l := range out {
		l.Release()
	}

	// An attempt that ends without an answer (a network error) is not
	// counted against a later report.
	f = newFixture(t, Config{}, "a")
	failed, answered := f.hold(), f.hold()
	failed.Release()
	f.p.SetBudget("a", 1, t0.Add(time.Minute)) // answered's answer
	f.pick("m")
	f.unavailable("m")
	answered.Release()
}

// The newest report is the budget, whether it says more or less than
// the one before, or moves the reset either way.
func TestFreshReportReplacesTheOld(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	r1 := t0.Add(time.Minute)
	f.p.SetBudget("a", 1, r1)
	f.pick("m")
	f.unavailable("m")
	f.rec.take()

	// Another answer says the window has room after all: the cooldown
	// ends at once, and the new count holds.
	f.p.SetBudget("a", 3, r1)
	if ev := f.rec.take(); len(ev) != 1 || ev[0].Type != api.EventCooldownEnded {
		t.Fatalf("events %+v, want cooldown_ended", ev)
	}
	for range 3 {
		f.pick("m")
	}
	f.unavailable("m")
	if ev := f.rec.take(api.EventCooldownStarted); len(ev) != 1 {
		t.Fatalf("cooldown events %+v, want one for the new exhaustion", ev)
	}

	// Spent reports that move the reset move the cooldown, quietly.
	for _, reset := range []time.Time{t0.Add(2 * time.Minute), t0.Add(30 * time.Second)} {
		f.p.SetBudget("a", 0, reset)
		if u := f.unavailable("m"); u.NextReady != reset.Sub(f.now()) {
			t.Fatalf("NextReady %v, want %v", u.NextReady, reset.Sub(f.now()))
		}
		if cd := f.status("a").Cooldowns; len(cd) != 1 || !cd[0].Until.Equal(reset) {
			t.Fatalf("cooldowns %+v, want one until %v", cd, reset)
		}
	}
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events %+v, want none for a moved reset", ev)
	}
	f.clk.Advance(30 * time.Second)
	if ev := f.rec.take(); len(ev) != 1 || ev[0].Type != api.EventCooldownEnded {
		t.Fatalf("events %+v, want cooldown_ended at the last reset", ev)
	}
	f.pick("m")

	// A report of a window already over changes nothing.
	f.p.SetBudget("a", 0, f.now())
	f.pick("m")
	f.p.SetBudget("nope", 0, r1) // unknown ids are ignored
}

// A budget that still had room at its reset is forgotten: the window
// refilled, and nothing limits the credential until the next report.
func TestBudgetForgottenAfterReset(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	f.p.SetBudget("a", 3, reset)
	f.pick("m")
	f.clk.AdvanceTo(reset)
	for i := range 10 {
		if _, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"}); err != nil {
			t.Fatalf("lease %d after the reset: %v", i+1, err)
		}
	}
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events %+v", ev)
	}
}

// A spent budget's reset lets one request through; the rest wait for an
// answer that says how much the new window holds.
func TestSpentBudgetReturnsAsOneProbe(t *testing.T) {
	for _, answer := range []string{"report", "no report", "no answer"} {
		t.Run(answer, func(t *testing.T) {
			f := newFixture(t, Config{}, "a")
			reset := t0.Add(time.Minute)
			f.p.SetBudget("a", 0, reset)
			f.clk.AdvanceTo(reset)
			probe := f.hold()
			u := f.unavailable("m")
			if u.Busy != 1 || u.HasNext || !strings.Contains(u.Error(), "one probe in flight") {
				t.Fatalf("second request: %+v %q", u, u.Error())
			}
			switch answer {
			case "report":
				next := reset.Add(time.Minute)
				f.p.SetBudget("a", 2, next)
				f.p.Confirm("a")
				f.hold()
				f.hold()
				if u := f.unavailable("m"); u.Cooling != 1 || u.NextReady != time.Minute {
					t.Fatalf("after the new budget's 2: %+v", u)
				}
			case "no report":
				// An upstream that stopped reporting does not keep the
				// credential one request at a time.
				f.p.Confirm("a")
				for range 5 {
					f.hold()
				}
			case "no answer":
				// The probe failed before any answer: the next request
				// probes, alone.
				probe.Release()
				f.hold()
				f.unavailable("m")
			}
		})
	}
}

// A stream begun before the reset that ends after it says nothing about
// the new window: its Record does not let the waiting requests in.
func TestOldStreamDoesNotEndTheProbe(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	f.p.SetBudget("a", 1, reset)
	old := f.hold()
	f.p.SetBudget("a", 0, reset) // its answer: the last one
	f.clk.AdvanceTo(reset)
	probe := f.hold()
	f.p.Record("a", true, false) // the old stream's last byte
	old.Release()
	f.unavailable("m")
	probe.Release()
}

// Budgets never climb the ladder: after several exhaustions, a bare 429
// is still step 1.
func TestBudgetTakesNoLadderStep(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	for range 3 {
		f.p.SetBudget("a", 1, f.now().Add(time.Minute))
		f.pick("m")
		f.unavailable("m")
		f.clk.Advance(time.Minute)
	}
	if cs := f.p.State().Credentials["a"]; len(cs.Ladders) != 0 {
		t.Fatalf("ladders %+v", cs.Ladders)
	}
	res := f.p.CoolDown("a", "", ScopeCredential, 0, "429")
	if res.Step != 1 || res.Until != f.now().Add(30*time.Second) {
		t.Fatalf("first 429: %+v, want step 1 for 30s", res)
	}
}

// Reset forgets the budget (the user says try it now); Remove stops the
// timer, so no event names a credential that is gone.
func TestResetAndRemoveForgetTheBudget(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.SetBudget("a", 0, t0.Add(time.Minute))
	f.p.SetBudget("b", 0, t0.Add(time.Minute))
	f.rec.take()
	if err := f.p.Reset("a"); err != nil {
		t.Fatal(err)
	}
	ev := f.rec.take()
	if len(ev) != 2 || ev[0].Type != api.EventCooldownEnded || ev[1].Type != api.EventCredentialUpdated {
		t.Fatalf("events %+v", ev)
	}
	if got := f.pick("m"); got != "a" {
		t.Fatalf("after Reset picked %s", got)
	}
	f.p.Remove("b")
	f.rec.take()
	f.clk.Advance(time.Minute)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events after Remove: %+v", ev)
	}
}
