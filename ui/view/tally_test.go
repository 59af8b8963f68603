package view

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// mixedSnapshot has a credential in every standing: ready, limited (a model
// cools down), cooling, held by its reserve, needing a login, paused, a
// model without a plan (payment) and a provider that is all cooling.
func mixedSnapshot() *api.Status {
	cred := func(id, prov string) api.CredentialStatus {
		return api.CredentialStatus{ID: id, Provider: prov, Label: id, Kind: api.KindOAuth, State: api.StateReady}
	}
	ready, limited, cooling, held, login := cred("ready", "anthropic"), cred("limited", "anthropic"),
		cred("cooling", "anthropic"), cred("held", "anthropic"), cred("login", "anthropic")
	limited.Cooldowns = []api.Cooldown{{Scope: "model", Model: "claude-opus-4", Until: *at(time.Minute)}}
	cooling.State = api.StateCooling
	cooling.Cooldowns = []api.Cooldown{{Scope: "credential", Until: *at(30 * time.Second)}}
	held.Reserve, held.ReservedUntil = 10, at(time.Hour)
	login.State = api.StateParked
	login.Parks = []api.Park{{Kind: api.ParkRelogin}}
	paused, plan, o3 := cred("paused", "openai"), cred("plan", "openai"), cred("o3", "openai")
	paused.State = api.StatePaused
	plan.Parks = []api.Park{{Kind: api.ParkPayment, Model: "gpt-5-pro"}}
	g1, g2 := cred("g1", "google"), cred("g2", "google")
	return &api.Status{Listen: "127.0.0.1:8787", Now: t0, Providers: []api.ProviderStatus{
		{Name: "anthropic", Credentials: []api.CredentialStatus{ready, limited, cooling, held, login}},
		{Name: "openai", Credentials: []api.CredentialStatus{paused, plan, o3}},
		{Name: "google", Credentials: []api.CredentialStatus{g1, g2},
			Cooldown: &api.Cooldown{Scope: "provider", Until: *at(time.Minute)}},
	}}
}

var sectionReady = regexp.MustCompile(`^(\d+) of (\d+) ready`)

// The title, each section's header and the badges count the same rows the
// same way, over every standing at once (issue 42).
func TestCountsAgree(t *testing.T) {
	h := newHarness(t)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: mixedSnapshot()})
	v := h.view()

	var sum Tally
	for _, s := range v.Sections {
		n := TallyRows(s.Rows)
		sum = sum.Plus(n)
		if m := sectionReady.FindStringSubmatch(s.Summary); m != nil {
			if got, _ := strconv.Atoi(m[1]); got != n.Ready {
				t.Errorf("%s says %q, %d rows have a ready badge", s.Name, s.Summary, n.Ready)
			}
			if got, _ := strconv.Atoi(m[2]); got != len(s.Rows) {
				t.Errorf("%s says %q of %d rows", s.Name, s.Summary, len(s.Rows))
			}
		} else if n.Ready+n.Limited > 0 {
			t.Errorf("%s says %q with %d rows serving", s.Name, s.Summary, n.Ready+n.Limited)
		}
	}
	if v.Summary != sum.String() {
		t.Errorf("title %q, the sections' rows %q", v.Summary, sum.String())
	}
	want := Tally{Ready: 2, Limited: 1, Cooling: 3, Held: 1, Login: 1, Payment: 1, Paused: 1, Total: 10}
	if sum != want {
		t.Errorf("tally %+v, want %+v", sum, want)
	}
	for name, summary := range map[string]string{
		"anthropic": "1 of 5 ready · 1 limited", "openai": "1 of 3 ready", "google": "none ready · next in 1m",
	} {
		if got := h.section(name).Summary; got != summary {
			t.Errorf("%s: %q, want %q", name, got, summary)
		}
	}
	if v.Summary != "2 ready · 1 limited · 3 cooling · 1 held by reserve · 1 needs a login · 1 payment · 1 paused" {
		t.Errorf("title %q", v.Summary)
	}
	// A row counted ready has the ready badge, and no badge word goes
	// uncounted.
	for _, s := range v.Sections {
		for _, r := range s.Rows {
			if TallyRows([]Row{r}) == (Tally{Total: 1}) {
				t.Errorf("row %s: badge %q is counted nowhere", r.ID, r.Badge.Text)
			}
		}
	}
}
