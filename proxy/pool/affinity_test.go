package pool

import (
	"fmt"
	"testing"
	"time"
)

func (f *fixture) pickAff(key string) string {
	f.t.Helper()
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m", Affinity: key})
	if err != nil {
		f.t.Fatalf("Pick(affinity %q): %v", key, err)
	}
	l.Release()
	return l.Credential.ID
}

// Scenario 7: a conversation stays on its credential while it is usable,
// though least-recently-used alone would alternate.
func TestAffinityStaysWhileUsable(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B", "C")
	first := f.pickAff("s1")
	for i := range 5 {
		if got := f.pickAff("s1"); got != first {
			t.Fatalf("pick %d for s1 went to %s, want %s", i, got, first)
		}
		f.pick("m") // other traffic moves the least-recently-used order
	}
	// A second conversation binds anew, to the least recently used.
	if got := f.pickAff("s2"); got == first {
		t.Fatalf("s2 bound to %s, the credential s1 just used", got)
	}
}

// Scenario 7: when its credential cools the key moves, and it stays on the
// new one after the old recovers: moving back would only cost the new
// credential's cache.
func TestAffinityMovesWhenCoolingAndStays(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	if got := f.pickAff("s"); got != "A" {
		t.Fatalf("bound to %s, want A", got)
	}
	res := f.p.CoolDown("A", "", ScopeCredential, 0, "429")
	if got := f.pickAff("s"); got != "B" {
		t.Fatalf("while A cools: %s, want B", got)
	}
	f.clk.AdvanceTo(res.Until)
	for range 3 {
		if got := f.pickAff("s"); got != "B" {
			t.Fatalf("after A recovered: %s, want B", got)
		}
	}
	// A model cooldown moves only the requests for that model.
	f.p.CoolDown("B", "m", ScopeModel, 0, "")
	if got := f.pickAff("s"); got != "A" {
		t.Fatalf("while B cools for m: %s, want A", got)
	}
}

func TestAffinityMovesWhenBusyPausedOrExcluded(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 1}, "A", "B")
	f.pickAff("s") // A
	hold, _ := f.p.Acquire("A", "m")
	if got := f.pickAff("s"); got != "B" {
		t.Fatalf("while A is full: %s, want B", got)
	}
	hold.Release()
	if got := f.pickAff("s"); got != "B" {
		t.Fatalf("re-bound key left B for %s", got)
	}
	f.p.Pause("B")
	if got := f.pickAff("s"); got != "A" {
		t.Fatalf("B paused: %s, want A", got)
	}
	f.p.Resume("B")
	l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m", Affinity: "s", Exclude: map[string]bool{"A": true}})
	if err != nil || l.Credential.ID != "B" {
		t.Fatalf("A excluded: %v %v, want B", l, err)
	}
	l.Release()
	if got := f.pickAff("s"); got != "B" {
		t.Fatalf("after the retry the key is on %s, want B", got)
	}
}

func TestAffinityIsPerProvider(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	f.p.Add(Credential{ID: "O", Provider: "openai"})
	f.pickAff("s") // anthropic: A
	l, err := f.p.Pick(PickRequest{Provider: "openai", Affinity: "s"})
	if err != nil || l.Credential.ID != "O" {
		t.Fatalf("openai: %v %v", l, err)
	}
	l.Release()
	if got := f.pickAff("s"); got != "A" {
		t.Fatalf("anthropic key moved to %s after the same key hit openai", got)
	}
}

// The map is bounded: keys idle past AffinityIdle are forgotten, and a
// full map makes room.
func TestAffinityIsBounded(t *testing.T) {
	f := newFixture(t, Config{AffinityMax: 4, AffinityIdle: time.Hour}, "A", "B")
	for i := range 4 {
		f.pickAff(fmt.Sprint("old", i))
	}
	f.clk.Advance(time.Hour)
	f.pickAff("new0")
	if n := len(f.p.aff.m); n != 1 {
		t.Fatalf("%d keys after the idle ones were swept, want 1", n)
	}
	for i := 1; i < 10; i++ {
		f.clk.Advance(time.Second)
		f.pickAff(fmt.Sprint("new", i))
		if n := len(f.p.aff.m); n > 4 {
			t.Fatalf("%d keys, over AffinityMax 4", n)
		}
	}
	if f.p.aff.lookup("anthropic", "new9") == nil {
		t.Fatal("the newest key was evicted")
	}
}

// An idle key is not honoured even while still in the map.
func TestAffinityForgetsIdleKey(t *testing.T) {
	f := newFixture(t, Config{AffinityIdle: time.Hour}, "A", "B")
	if got := f.pickAff("s"); got != "A" {
		t.Fatalf("bound to %s", got)
	}
	f.clk.Advance(time.Hour - time.Millisecond)
	if got := f.pickAff("s"); got != "A" {
		t.Fatalf("within the idle time moved to %s", got)
	}
	f.clk.Advance(time.Hour)
	if got := f.pickAff("s"); got != "B" {
		t.Fatalf("after an idle hour: %s, want B (least recently used)", got)
	}
}
