package pool

import (
	"reflect"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// paceEvents takes the pace_changed events recorded so far and checks
// that each names its credential's provider and carries the paces status
// shows now.
func (f *fixture) paceEvents() []api.Event {
	f.t.Helper()
	evs := f.rec.take(api.EventPaceChanged)
	for _, e := range evs {
		if e.Provider != "anthropic" || e.Label != e.CredentialID {
			f.t.Errorf("pace_changed names %q of %q (%q)", e.CredentialID, e.Provider, e.Label)
		}
	}
	return evs
}

// A pace's start, the lease that spends its window, and its forgetting
// each send pace_changed with the credential's paces as status lists
// them; a success that changes nothing shown, and a next time that only
// passes, send none.
func TestPaceChangedTellsEachChange(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	for range 4 {
		f.ok(f.lease("a"))
		f.clk.Advance(time.Second)
	}
	if evs := f.paceEvents(); len(evs) != 0 {
		t.Fatalf("no pace yet, events %+v", evs)
	}
	f.silent(f.lease("a"))
	evs := f.paceEvents()
	if len(evs) != 1 || evs[0].CredentialID != "a" || len(evs[0].Paces) != 1 || evs[0].Paces[0].Requests != 2 ||
		!reflect.DeepEqual(evs[0].Paces, f.paces("a")) {
		t.Fatalf("after the first bare 429: %+v, want a's one pace of 2 requests", evs)
	}

	// The ladder's cooldown over, the comeback starts a window whose
	// length is not known yet: what status shows is the same.
	f.clk.Advance(30 * time.Second)
	f.ok(f.lease("a"))
	if evs := f.paceEvents(); len(evs) != 0 {
		t.Errorf("a comeback that changes nothing shown: %+v", evs)
	}

	// The upstream names its reset: the pace is forgotten, and said so.
	f.p.CoolDown("a", "m", ScopeCredential, time.Second, "429 retry-after 1")
	if evs := f.paceEvents(); len(evs) != 1 || evs[0].CredentialID != "a" || len(evs[0].Paces) != 0 {
		t.Errorf("forgotten by the headers: %+v, want one event with no paces", evs)
	}
	f.p.Reset("a")
	if evs := f.paceEvents(); len(evs) != 0 {
		t.Errorf("nothing left to forget: %+v", evs)
	}
}

// The lease that spends a learned window says when the next may go; that
// time passing is no news, and a quiet spell forgets the pace on the
// clock, with no request to notice it.
func TestPaceChangedTellsTheNextAndTheQuietSpell(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	f.setPace("a", 2, time.Minute, f.now(), 0)
	f.ok(f.lease("a"))
	if evs := f.paceEvents(); len(evs) != 1 || len(evs[0].Paces) != 1 || evs[0].Paces[0].Next != nil || evs[0].Paces[0].WindowMS != 60000 {
		t.Fatalf("first lease: %+v, want the pace, nothing held", evs)
	}
	f.ok(f.lease("a"))
	end := t0.Add(time.Minute)
	evs := f.paceEvents()
	if len(evs) != 1 || len(evs[0].Paces) != 1 || evs[0].Paces[0].Next == nil || !evs[0].Paces[0].Next.Equal(end) {
		t.Fatalf("the window spent: %+v, want the next at %s", evs, end)
	}
	f.clk.Advance(time.Minute)
	f.p.Confirm("a", "m")
	if evs := f.paceEvents(); len(evs) != 0 {
		t.Errorf("the next time passed: %+v, want no event", evs)
	}
	if ps := f.paces("a"); len(ps) != 1 {
		t.Fatalf("paces %+v, want the one still live", ps)
	}

	// Quiet from its last lease (at t0) for DefaultResetAfter: forgotten.
	f.clk.Advance(DefaultResetAfter - time.Minute)
	if evs := f.paceEvents(); len(evs) != 0 {
		t.Fatalf("at the edge of the quiet spell: %+v", evs)
	}
	f.clk.Advance(time.Millisecond)
	if evs := f.paceEvents(); len(evs) != 1 || len(evs[0].Paces) != 0 || len(f.paces("a")) != 0 {
		t.Errorf("after the quiet spell: %+v, want one event with no paces", evs)
	}
}

// A provider's pace holds every credential of it: each is told.
func TestPaceChangedTellsEveryCredentialOfAProvidersPace(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.SetProvider("anthropic", LimitEgress)
	for range 4 {
		f.ok(f.lease("a"))
		f.clk.Advance(time.Second)
	}
	f.silent(f.lease("a"))
	got := map[string]string{}
	for _, e := range f.paceEvents() {
		if len(e.Paces) == 1 {
			got[e.CredentialID] = e.Paces[0].Scope
		}
	}
	if got["a"] != string(ScopeProvider) || got["b"] != string(ScopeProvider) || len(got) != 2 {
		t.Fatalf("pace_changed scopes by credential %v, want the provider's on a and b", got)
	}
	f.p.Reset("a")
	for _, e := range f.paceEvents() {
		delete(got, e.CredentialID)
		if len(e.Paces) != 0 {
			t.Errorf("after reset %s still has %+v", e.CredentialID, e.Paces)
		}
	}
	if len(got) != 0 {
		t.Errorf("not told the provider's pace is forgotten: %v", got)
	}
}
