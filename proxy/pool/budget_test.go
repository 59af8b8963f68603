package pool

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// hold picks for model "m" and keeps the lease.
func (f *fixture) hold() *Lease {
	f.t.Helper()
	return f.holdFor("m")
}

// holdFor picks for model and keeps the lease.
func (f *fixture) holdFor(model string) *Lease {
	f.t.Helper()
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: model})
	if err != nil {
		f.t.Fatalf("Pick(%q): %v", model, err)
	}
	return l
}

// A budget reported spent keeps the credential out for its model until
// the reset, as a model cooldown would: NextReady is the reset, Status and
// the events show it (scope model), and the end goes out live.
func TestSpentBudgetCoolsUntilReset(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	reset := t0.Add(40 * time.Second)
	f.p.SetBudget("a", "m", 0, reset)
	why := "budget spent (0 requests left until 12:00:40)"
	want := api.Event{Type: api.EventCooldownStarted, Time: t0, Provider: "anthropic", CredentialID: "a", Label: "a",
		Reason: why, Until: &reset, Steps: 3, Scope: "model", Model: "m", Budget: true}
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
	if !strings.Contains(u.Error(), "a: cooling 40s for m ("+why+")") {
		t.Fatalf("Error() = %q", u.Error())
	}
	if d, ok := nextReady(f.p, "anthropic", "m"); !ok || d != 40*time.Second {
		t.Fatalf("NextReady = %v %v, want 40s", d, ok)
	}
	// The credential itself is ready: only m is held, as the tray shows
	// a model's cooldown ("m cooling 40s · budget spent …").
	s := f.status("a")
	wantCD := api.Cooldown{Scope: "model", Model: "m", Until: reset, Steps: 3, Reason: why, Budget: true}
	if s.State != api.StateReady || len(s.Cooldowns) != 1 || s.Cooldowns[0] != wantCD {
		t.Fatalf("status %s %+v, want ready with %+v", s.State, s.Cooldowns, wantCD)
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
		Reason: why, Scope: "model", Model: "m", Budget: true}
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
	f.p.SetBudget("a", "m", 2, reset)
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
	f.p.SetBudget("a", "m", 5, t0.Add(time.Minute))
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
	f.p.SetBudget("a", "m", 1, t0.Add(time.Minute)) // answered's answer
	f.pick("m")
	f.unavailable("m")
	answered.Release()
}

// The newest report is the budget, whether it says more or less than
// the one before, or moves the reset either way.
func TestFreshReportReplacesTheOld(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	r1 := t0.Add(time.Minute)
	f.p.SetBudget("a", "m", 1, r1)
	f.pick("m")
	f.unavailable("m")
	f.rec.take()

	// Another answer says the window has room after all: the cooldown
	// ends at once, and the new count holds.
	f.p.SetBudget("a", "m", 3, r1)
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
		f.p.SetBudget("a", "m", 0, reset)
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
	f.p.SetBudget("a", "m", 0, f.now())
	f.pick("m")
	f.p.SetBudget("nope", "m", 0, r1) // unknown ids are ignored
}

// A budget that still had room at its reset is forgotten: the window
// refilled, and nothing limits the credential until the next report.
func TestBudgetForgottenAfterReset(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	f.p.SetBudget("a", "m", 3, reset)
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
			f.p.SetBudget("a", "m", 0, reset)
			f.clk.AdvanceTo(reset)
			probe := f.hold()
			u := f.unavailable("m")
			if u.Busy != 1 || u.HasNext || !strings.Contains(u.Error(), "one probe in flight") {
				t.Fatalf("second request: %+v %q", u, u.Error())
			}
			switch answer {
			case "report":
				next := reset.Add(time.Minute)
				f.p.SetBudget("a", "m", 2, next)
				f.p.Confirm("a", "m")
				f.hold()
				f.hold()
				if u := f.unavailable("m"); u.Cooling != 1 || u.NextReady != time.Minute {
					t.Fatalf("after the new budget's 2: %+v", u)
				}
			case "no report":
				// An upstream that stopped reporting does not keep the
				// credential one request at a time.
				f.p.Confirm("a", "m")
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
	f.p.SetBudget("a", "m", 1, reset)
	old := f.hold()
	f.p.SetBudget("a", "m", 0, reset) // its answer: the last one
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
		f.p.SetBudget("a", "m", 1, f.now().Add(time.Minute))
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
	f.p.SetBudget("a", "m", 0, t0.Add(time.Minute))
	f.p.SetBudget("b", "m", 0, t0.Add(time.Minute))
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

// Budgets are per (credential, model): OpenAI counts request limits per
// model, Anthropic's API keys per model class. A model whose budget is
// spent is held; the others on the same credential are not, and an
// answer for one of them that reports room does not reopen it. A budget
// reported for a request naming no model (key "") holds only those.
func TestSpentBudgetHoldsOnlyItsModel(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(40 * time.Second)
	f.p.SetBudget("a", "A", 0, reset)
	ev := f.rec.take()
	if len(ev) != 1 || ev[0].Type != api.EventCooldownStarted || ev[0].Scope != "model" || ev[0].Model != "A" {
		t.Fatalf("events %+v, want cooldown_started for model A", ev)
	}
	for _, m := range []string{"B", "B", ""} {
		if got := f.pick(m); got != "a" {
			t.Fatalf("Pick(%q) = %s", m, got)
		}
	}
	u := f.unavailable("A")
	if u.Cooling != 1 || u.NextReady != 40*time.Second || len(u.Reasons) != 1 || !strings.HasPrefix(u.Reasons[0], "a: cooling 40s for A (budget spent") {
		t.Fatalf("Pick(A): %+v", u)
	}
	if d, ok := nextReady(f.p, "anthropic", "B"); !ok || d != 0 {
		t.Fatalf("NextReady(B) = %v %v, want ready now", d, ok)
	}
	if d, ok := nextReady(f.p, "anthropic", "A"); !ok || d != 40*time.Second {
		t.Fatalf("NextReady(A) = %v %v, want 40s", d, ok)
	}

	// B's own answer says it has room: A stays spent, quietly.
	f.p.SetBudget("a", "B", 7, reset)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events after B's report: %+v", ev)
	}
	f.unavailable("A")
	if got := f.pick("B"); got != "a" {
		t.Fatalf("Pick(B) = %s", got)
	}

	// The "" budget: requests without a model only.
	f.p.SetBudget("a", "", 0, t0.Add(20*time.Second))
	f.unavailable("")
	if got := f.pick("B"); got != "a" {
		t.Fatalf("Pick(B) after the \"\" budget = %s", got)
	}
	s := f.status("a")
	if s.State != api.StateReady || len(s.Cooldowns) != 2 ||
		s.Cooldowns[0].Scope != "model" || s.Cooldowns[0].Model != "" || !s.Cooldowns[0].Until.Equal(t0.Add(20*time.Second)) ||
		s.Cooldowns[1].Scope != "model" || s.Cooldowns[1].Model != "A" || !s.Cooldowns[1].Until.Equal(reset) {
		t.Fatalf("status %s %+v, want ready with the \"\" and A budgets", s.State, s.Cooldowns)
	}

	f.rec.take()
	f.clk.AdvanceTo(reset)
	ev = f.rec.take(api.EventCooldownEnded)
	if len(ev) != 2 || ev[0].Model != "" || ev[1].Model != "A" || ev[1].Scope != "model" {
		t.Fatalf("ended %+v, want \"\" then A", ev)
	}
	if got := f.pick("A"); got != "a" {
		t.Fatalf("Pick(A) after the reset = %s", got)
	}
}

// Each lease counts against the budget of the model it was taken for, and
// a report is reduced only by its own model's attempts still unanswered.
func TestBudgetCountsPerModel(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	// Two B attempts and one A attempt out; A's answer says 2 left. The
	// B attempts are not A's: A keeps both.
	f.p.Pick(PickRequest{Provider: "anthropic", Model: "B"})
	f.p.Pick(PickRequest{Provider: "anthropic", Model: "B"})
	a, _ := f.p.Pick(PickRequest{Provider: "anthropic", Model: "A"})
	f.p.SetBudget("a", "A", 2, reset)
	f.p.SetBudget("a", "B", 3, reset) // one B answer: 3 minus the other B still out
	a.Release()
	for range 2 {
		if got := f.pick("B"); got != "a" {
			t.Fatalf("Pick(B) = %s", got)
		}
	}
	// B is spent now (3 − 1 unanswered − 2); A has not moved.
	if ev := f.rec.take(api.EventCooldownStarted); len(ev) != 1 || ev[0].Model != "B" {
		t.Fatalf("cooldowns %+v, want B's", ev)
	}
	f.unavailable("B")
	for range 2 {
		if got := f.pick("A"); got != "a" {
			t.Fatalf("Pick(A) = %s", got)
		}
	}
	f.unavailable("A")
	if ev := f.rec.take(api.EventCooldownStarted); len(ev) != 1 || ev[0].Model != "A" {
		t.Fatalf("cooldowns %+v, want A's", ev)
	}
	// Leases for a third model count against neither.
	for range 5 {
		f.pick("C")
	}
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events %+v", ev)
	}

	// An A attempt that ends without an answer stops counting against A's
	// next report, though a B lease is still out on the credential.
	f = newFixture(t, Config{}, "a")
	f.holdFor("B")
	failed, answered := f.holdFor("A"), f.holdFor("A")
	failed.Release()
	f.p.SetBudget("a", "A", 1, reset) // answered's answer
	f.pick("A")
	f.unavailable("A")
	answered.Release()
}

// After the reset each model probes on its own: A's probe holds the other
// A requests back, not B's, and A's answer opens A only.
func TestBudgetProbePerModel(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	reset := t0.Add(time.Minute)
	f.p.SetBudget("a", "A", 0, reset)
	f.p.SetBudget("a", "B", 0, reset)
	f.clk.AdvanceTo(reset)
	f.holdFor("A")
	if u := f.unavailable("A"); u.Busy != 1 || !strings.Contains(u.Error(), "one probe in flight") {
		t.Fatalf("second A: %+v %q", u, u.Error())
	}
	f.holdFor("B")
	if u := f.unavailable("B"); u.Busy != 1 {
		t.Fatalf("second B: %+v", u)
	}
	// A's probe answered 2xx without a budget: A is open, B still probing.
	f.p.Confirm("a", "A")
	for range 3 {
		f.holdFor("A")
	}
	f.unavailable("B")
	// B's probe reports its new budget: B is open to it.
	f.p.SetBudget("a", "B", 2, reset.Add(time.Minute))
	f.holdFor("B")
	f.holdFor("B")
	if u := f.unavailable("B"); u.Cooling != 1 || u.NextReady != time.Minute {
		t.Fatalf("B after its 2: %+v", u)
	}
	f.holdFor("A")
}

// The budget map holds the models that matter: with a lease out, a budget
// before its reset, or a spent one whose probe may still be owed. A new
// model prunes the rest, so clients naming models at random do not grow
// it; a spent budget whose reset is refillGrace past is forgotten, whether
// pruned or found by a request for its model, which then needs no probe.
func TestBudgetMapIsBounded(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	size := func() int { return len(f.p.byID["a"].buds) }
	for i := range 1000 {
		f.pick(fmt.Sprintf("random-%d", i))
	}
	if n := size(); n > 1 {
		t.Fatalf("%d entries after 1000 one-off models", n)
	}
	reset := t0.Add(time.Minute)
	for i := range 50 {
		f.p.SetBudget("a", fmt.Sprintf("m%d", i), 5, reset)
	}
	f.p.SetBudget("a", "s", 0, reset)
	f.p.SetBudget("a", "t", 0, reset)
	f.pick("x")
	if n := size(); n != 53 {
		t.Fatalf("%d entries, want the 52 budgets and x", n)
	}
	f.clk.AdvanceTo(reset)
	f.pick("y")
	if n := size(); n != 3 {
		t.Fatalf("%d entries after the reset, want s and t (their probes are owed) and y", n)
	}
	probe := f.holdFor("s")
	f.unavailable("s")
	probe.Release()
	f.clk.Advance(refillGrace)
	// t is found, not pruned: its lease forgets the budget, and the next
	// one is no longer held back by a probe.
	l1, l2 := f.holdFor("t"), f.holdFor("t")
	l1.Release()
	l2.Release()
	// z prunes s unasked, and the others.
	f.pick("z")
	if n := size(); n != 1 {
		t.Fatalf("%d entries, want z alone", n)
	}
	f.holdFor("s")
	f.holdFor("s")
	f.checkBudgets()
}
