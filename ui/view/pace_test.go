package view

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

func TestPaceText(t *testing.T) {
	for _, c := range []struct {
		name string
		p    api.Pace
		want string
	}{
		{"learned, holding the key", api.Pace{Scope: "credential", Requests: 30, WindowMS: 300_000, Next: at(40 * time.Second)},
			"paced · 30 per 5m · next 40s"},
		{"learned to the second", api.Pace{Scope: "credential", Requests: 30, WindowMS: 296_000}, "paced · 30 per 4m56s"},
		{"its next request already due", api.Pace{Scope: "credential", Requests: 3, WindowMS: 20_000, Next: at(-time.Second)},
			"paced · 3 per 20s"},
		{"one model's", api.Pace{Scope: "model", Model: "gemini-2.5-flash", Requests: 10, WindowMS: 60_000, Next: at(90 * time.Second)},
			"paced gemini-2.5-flash · 10 per 1m · next 1m30s"},
		{"the provider's, behind one address", api.Pace{Scope: "provider", Requests: 60, WindowMS: 60_000},
			"paced with the whole provider · 60 per 1m"},
		{"the count known, not the length", api.Pace{Scope: "credential", Requests: 12}, "paced · 12 a window, its length not learned yet"},
		{"nothing learned yet", api.Pace{Scope: "credential", Next: at(5 * time.Second)}, "paced · learning its limit · next 5s"},
	} {
		if got := PaceText(c.p, t0); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func pacedStatus() *api.Status {
	return &api.Status{Listen: "127.0.0.1:8787", Now: t0, Providers: []api.ProviderStatus{
		{Name: "google", Wire: "gemini", Credentials: []api.CredentialStatus{
			{ID: "g2", Provider: "google", Label: "gemini-key", Kind: api.KindAPIKey, State: api.StateReady,
				Paces: []api.Pace{
					{Scope: "credential", Requests: 30, WindowMS: 300_000, Next: at(40 * time.Second)},
					{Scope: "model", Model: "gemini-2.5-pro", Requests: 5, WindowMS: 60_000, Next: at(10 * time.Second)},
				}},
		}},
	}}
}

// A paced key is ready, and its row says when it sends next, counting
// down, then only its pace once that time has come.
func TestPacedRowSaysWhenItSendsNext(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: pacedStatus()})
	r := h.row("g2")
	if r.Badge.Text != badgeReady || r.Line != "paced · 30 per 5m · next 40s" || r.Menu != r.Line {
		t.Fatalf("badge %q line %q menu %q", r.Badge.Text, r.Line, r.Menu)
	}
	if v := h.view(); !v.Ticking || v.Summary != "1 ready" {
		t.Errorf("ticking %v, summary %q", v.Ticking, v.Summary)
	}
	h.clk.Advance(41 * time.Second)
	if r := h.row("g2"); r.Line != "paced · 30 per 5m" || h.view().Ticking {
		t.Errorf("after its next time: line %q, ticking %v", r.Line, h.view().Ticking)
	}

	// A cooldown outranks the pace on the row.
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "google", CredentialID: "g2", Until: at(71 * time.Second), Reason: "429"})
	if r := h.row("g2"); r.Badge.Text != badgeCooling || r.Line != "cooling 30s · 429" {
		t.Errorf("cooling: badge %q line %q", r.Badge.Text, r.Line)
	}
}

// Status read again brings the paces only: the pool forgot this one, and
// a cooldown the events started stays.
func TestApplyPacesTakesOnlyThePaces(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: pacedStatus()})
	if !h.m.Paced() {
		t.Fatal("no pace seen in the snapshot")
	}
	h.send(api.Event{Type: api.EventCooldownStarted, Provider: "google", CredentialID: "g2", Scope: "model", Model: "gemini-2.5-flash",
		Until: at(30 * time.Second), Reason: "429"})
	fresh := pacedStatus()
	fresh.Providers[0].Credentials[0].Paces = nil
	fresh.Providers[0].Credentials = append(fresh.Providers[0].Credentials, api.CredentialStatus{ID: "g9", Label: "unknown here",
		Paces: []api.Pace{{Scope: "credential", Requests: 1}}})
	h.m.ApplyPaces(*fresh)
	if h.m.Paced() {
		t.Error("still paced after status said no pace")
	}
	if r := h.row("g2"); r.Badge.Text != badgeLimited || r.Line != "gemini-2.5-flash cooling 30s · 429" {
		t.Errorf("badge %q line %q: the events' cooldown was lost", r.Badge.Text, r.Line)
	}
	if n := len(h.view().Sections[0].Rows); n != 1 {
		t.Errorf("%d rows: status added a credential the events never told of", n)
	}
}

func TestPaceNews(t *testing.T) {
	for _, c := range []struct {
		ev   api.Event
		want bool
	}{
		{api.Event{Type: api.EventCooldownStarted}, true},
		{api.Event{Type: api.EventRotated}, true},
		{api.Event{Type: api.EventWaitStarted}, true},
		{api.Event{Type: api.EventCredentialUpdated}, true},
		{api.Event{Type: api.EventRequestFinished, Status: 429}, true},
		{api.Event{Type: api.EventRequestFinished, Status: 200}, false},
		{api.Event{Type: api.EventUsageUpdated}, false},
		{api.Event{Type: api.EventCooldownEnded}, false},
	} {
		if got := PaceNews(c.ev); got != c.want {
			t.Errorf("%s %d: %v, want %v", c.ev.Type, c.ev.Status, got, c.want)
		}
	}
}
