package pool

import (
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Issue 14, observed 5: 100 concurrent requests refused by one limit read
// its reset at slightly different moments, as whole-second retry-after
// values; they confirm one cooldown instead of announcing it up to 100
// times.
func TestConcurrentRefusalsAnnounceOneCooldown(t *testing.T) {
	for _, egress := range []bool{false, true} {
		f := newFixture(t, Config{}, "a", "b")
		if egress {
			f.p.SetProvider("anthropic", LimitEgress)
		}
		reset := t0.Add(time.Minute + 500*time.Millisecond)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var started, extended, kept int
		for range 100 {
			wg.Go(func() {
				// Each answer is read a moment later than the one before.
				f.clk.Advance(3 * time.Millisecond)
				ra := reset.Sub(f.now())
				ra = (ra + time.Second - 1).Truncate(time.Second) // retry-after: whole seconds, rounded up
				res := f.p.CoolDown("a", "", ScopeCredential, ra, "429 rate_limit_error")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res.Started && !res.Extended && !res.Kept:
					started++
				case res.Extended && !res.Started && !res.Kept:
					extended++
				case res.Kept && !res.Started && !res.Extended:
					kept++
				default:
					t.Errorf("result %+v is not exactly one of started, extended, kept", res)
				}
			})
		}
		wg.Wait()
		if started != 1 || extended != 0 || kept != 99 {
			t.Errorf("egress %v: started %d, extended %d, kept %d; want 1, 0, 99", egress, started, extended, kept)
		}
		if ev := f.rec.take(api.EventCooldownStarted, api.EventCooldownExtended); len(ev) != 1 || ev[0].Type != api.EventCooldownStarted {
			t.Errorf("egress %v: events %+v, want one cooldown_started", egress, ev)
		}
	}
}

// A later time named by the upstream extends the cooldown, once, with its
// own event carrying what cooldown_started carries; a hit under a second
// later confirms it silently.
func TestExtensionIsAnnouncedAsExtended(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	first := f.p.CoolDown("a", "opus", ScopeModel, 10*time.Second, "429 a")
	f.clk.Advance(100 * time.Millisecond)
	if res := f.p.CoolDown("a", "opus", ScopeModel, 10*time.Second, "429 b"); !res.Kept || res.Until != first.Until {
		t.Fatalf("hit 100ms later, same retry-after: %+v, want kept at %v", res, first.Until)
	}
	res := f.p.CoolDown("a", "opus", ScopeModel, 40*time.Second, "429 c")
	until := f.now().Add(40 * time.Second)
	if !res.Extended || res.Started || res.Kept || res.Until != until || res.Step != 0 {
		t.Fatalf("hit with a later time: %+v, want extended to %v", res, until)
	}
	ev := f.rec.take()
	want := []api.Event{
		{Type: api.EventCooldownStarted, Time: t0, Provider: "anthropic", CredentialID: "a", Label: "a",
			Reason: "429 a", Until: &first.Until, Steps: 3, Scope: "model", Model: "opus"},
		{Type: api.EventCooldownExtended, Time: f.now(), Provider: "anthropic", CredentialID: "a", Label: "a",
			Reason: "429 c", Until: &until, Steps: 3, Scope: "model", Model: "opus"},
	}
	if len(ev) != len(want) {
		t.Fatalf("events %+v, want %+v", ev, want)
	}
	for i := range want {
		if !sameEvent(ev[i], want[i]) {
			t.Fatalf("event %d: %+v\nwant %+v", i, ev[i], want[i])
		}
	}
	// One cooldown, ending once, at the extended time.
	f.clk.AdvanceTo(first.Until)
	if ev := f.rec.take(); len(ev) != 0 {
		t.Fatalf("events at the first end: %+v", ev)
	}
	f.clk.AdvanceTo(until)
	if ev := f.rec.take(api.EventCooldownEnded); len(ev) != 1 {
		t.Fatalf("cooldown_ended events %+v, want one", ev)
	}
}
