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

// pace_changed brings a credential's paces, all of them each time: the
// row shows the one holding it back longest, and an empty list forgets
// the pace. An event for a credential the view does not know adds none,
// and none of them makes a line in the recent events.
func TestPaceChangedShowsOnTheRow(t *testing.T) {
	h := newHarness(t)
	st := pacedStatus()
	st.Providers[0].Credentials[0].Paces = nil
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: st})
	if r := h.row("g2"); r.Line != "" {
		t.Fatalf("before any pace: line %q", r.Line)
	}
	before := len(h.view().Events)

	paces := pacedStatus().Providers[0].Credentials[0].Paces
	h.send(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2", Paces: paces})
	if r := h.row("g2"); r.Badge.Text != badgeReady || r.Line != "paced · 30 per 5m · next 40s" || !h.view().Ticking {
		t.Errorf("paced: badge %q line %q ticking %v", r.Badge.Text, r.Line, h.view().Ticking)
	}
	paces[0].Requests = 99
	if r := h.row("g2"); r.Line != "paced · 30 per 5m · next 40s" {
		t.Errorf("the view keeps the event's list, not its own copy: line %q", r.Line)
	}
	h.send(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2", Paces: paces[1:]})
	if r := h.row("g2"); r.Line != "paced gemini-2.5-pro · 5 per 1m · next 10s" {
		t.Errorf("the model's pace only: line %q", r.Line)
	}
	h.send(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g9", Paces: paces})
	if n := len(h.view().Sections[0].Rows); n != 1 {
		t.Errorf("%d rows: a pace added a credential the events never told of", n)
	}
	h.send(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2"})
	if r := h.row("g2"); r.Badge.Text != badgeReady || r.Line != "" || h.view().Ticking {
		t.Errorf("forgotten: badge %q line %q ticking %v", r.Badge.Text, r.Line, h.view().Ticking)
	}
	if n := len(h.view().Events); n != before {
		t.Errorf("pace_changed wrote %d lines in the recent events", n-before)
	}
}
