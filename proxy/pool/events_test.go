package pool

import (
	"reflect"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Scenario 8: cooldown_ended goes out live when the clock passes until,
// and both events carry what the tray shows.
func TestCooldownEventsCarryFieldsAndEndLive(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.p.Add(Credential{ID: "a", Provider: "anthropic", Label: "Work key", Kind: api.KindAPIKey})
	f.rec.take()
	f.clk.Advance(time.Second)
	res := f.p.CoolDown("a", "opus", ScopeModel, 0, "429 rate_limit_error")
	until := t0.Add(31 * time.Second)
	ev := f.rec.take()
	want := api.Event{Type: api.EventCooldownStarted, Time: t0.Add(time.Second), Provider: "anthropic", CredentialID: "a",
		Label: "Work key", Reason: "429 rate_limit_error", Until: &until, Step: 1, Steps: 3, Scope: "model", Model: "opus"}
	if len(ev) != 1 || !sameEvent(ev[0], want) {
		t.Fatalf("events %+v\nwant %+v", ev, want)
	}
	if res.Until != until {
		t.Fatalf("Until %v, want %v", res.Until, until)
	}
	f.clk.Advance(30*time.Second - time.Millisecond)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events before until: %+v", ev)
	}
	f.clk.Advance(time.Millisecond)
	ev = f.rec.take()
	want = api.Event{Type: api.EventCooldownEnded, Time: until, Provider: "anthropic", CredentialID: "a",
		Label: "Work key", Reason: "429 rate_limit_error", Scope: "model", Model: "opus"}
	if len(ev) != 1 || !sameEvent(ev[0], want) {
		t.Fatalf("events %+v\nwant %+v", ev, want)
	}
	if s := f.status("a"); len(s.Cooldowns) != 0 {
		t.Fatalf("cooldown still listed after it ended: %+v", s.Cooldowns)
	}
}

func sameEvent(a, b api.Event) bool {
	if (a.Until == nil) != (b.Until == nil) || (a.Until != nil && !a.Until.Equal(*b.Until)) {
		return false
	}
	a.Until, b.Until = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestCredentialEvents(t *testing.T) {
	f := newFixture(t, Config{})
	minute := t0.Add(time.Minute)
	steps := []struct {
		do   func()
		want []api.Event
	}{
		{func() { f.p.Add(Credential{ID: "a", Provider: "anthropic", Label: "A"}) },
			[]api.Event{{Type: api.EventCredentialAdded, State: api.StateReady}}},
		{func() { f.p.Add(Credential{ID: "a", Provider: "anthropic", Label: "A"}) }, nil}, // nothing changed
		{func() { f.p.Add(Credential{ID: "a", Provider: "anthropic", Label: "A2"}) },
			[]api.Event{{Type: api.EventCredentialUpdated, State: api.StateReady}}},
		{func() { f.p.Pause("a") }, []api.Event{{Type: api.EventCredentialUpdated, State: api.StatePaused}}},
		{func() { f.p.Pause("a") }, nil},
		{func() { f.p.Resume("a") }, []api.Event{{Type: api.EventCredentialUpdated, State: api.StateReady}}},
		{func() { f.p.Park("a", "", api.ParkPayment, "card declined") },
			[]api.Event{{Type: api.EventParked, State: api.StateParked, Kind: api.ParkPayment, Reason: "card declined"}}},
		{func() { f.p.Unpark("a") }, []api.Event{{Type: api.EventCredentialUpdated, State: api.StateReady, Reason: "unparked"}}},
		{func() { f.p.CoolDown("a", "", ScopeCredential, time.Minute, "") },
			[]api.Event{{Type: api.EventCooldownStarted, Scope: "credential", Steps: 3, Until: &minute}}},
		{func() { f.p.Reset("a") }, []api.Event{
			{Type: api.EventCooldownEnded, Scope: "credential"},
			{Type: api.EventCredentialUpdated, State: api.StateReady, Reason: "reset"}}},
		{func() { f.p.Reset("a") }, nil},
		{func() { f.p.Remove("a") }, []api.Event{{Type: api.EventCredentialRemoved}}},
	}
	for i, s := range steps {
		s.do()
		got := f.rec.take()
		if len(got) != len(s.want) {
			t.Fatalf("step %d: events %+v, want %d", i, got, len(s.want))
		}
		for j, w := range s.want {
			w.Time, w.Provider, w.CredentialID = t0, "anthropic", "a"
			w.Label = "A2"
			if i == 0 {
				w.Label = "A"
			}
			if !sameEvent(got[j], w) {
				t.Fatalf("step %d event %d: %+v\nwant %+v", i, j, got[j], w)
			}
		}
	}
}

// Emit and OnChange run after the lock is released, so both may call back
// into the pool; and OnChange fires exactly for what State reflects.
func TestCallbacksRunOutsideTheLockAndOnlyOnStateChanges(t *testing.T) {
	clk := clock.NewFake(t0)
	var p *Pool
	em := &lockProbe{t: t, p: &p}
	p = New(clk, Config{}, em)
	changes := 0
	p.OnChange(func() {
		if !p.mu.TryLock() {
			t.Error("OnChange called with the pool locked")
		} else {
			p.mu.Unlock()
		}
		p.State()
		changes++
	})
	p.Add(Credential{ID: "a", Provider: "anthropic"})
	p.Add(Credential{ID: "b", Provider: "anthropic"})
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"pick and release", func() { l, _ := p.Pick(PickRequest{Provider: "anthropic"}); l.Release() }, 0},
		{"record", func() { p.Record("a", false, true) }, 0},
		{"reason, utilization, expiry", func() {
			p.SetReason("a", "x")
			p.SetUtilization("a", &api.Utilization{})
			p.SetExpiry("a", t0)
		}, 0},
		{"cool down", func() { p.CoolDown("a", "", ScopeCredential, 0, "") }, 1},
		{"straggler kept", func() { p.CoolDown("a", "", ScopeCredential, 0, "") }, 0},
		{"cooldown ends", func() { clk.Advance(30 * time.Second) }, 1},
		{"park", func() { p.Park("a", "m", api.ParkPayment, "") }, 1},
		{"same park again", func() { p.Park("a", "m", api.ParkPayment, "") }, 0},
		{"unpark", func() { p.Unpark("a") }, 1},
		{"pause", func() { p.Pause("b") }, 1},
		{"resume", func() { p.Resume("b") }, 1},
		{"reset", func() { p.Reset("a") }, 1},
		{"remove", func() { p.Remove("b") }, 1},
	}
	for _, s := range steps {
		changes = 0
		s.do()
		if changes != s.want {
			t.Errorf("%s: OnChange called %d times, want %d", s.name, changes, s.want)
		}
	}
	if em.n == 0 {
		t.Fatal("no events seen")
	}
}

type lockProbe struct {
	t *testing.T
	p **Pool
	n int
}

func (l *lockProbe) Emit(e api.Event) {
	p := *l.p
	if !p.mu.TryLock() {
		l.t.Errorf("Emit(%s) called with the pool locked", e.Type)
		return
	}
	p.mu.Unlock()
	p.Status("") // a hub answering with a snapshot
	l.n++
}
