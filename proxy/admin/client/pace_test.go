package client_test

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// pace_changed reaches a client over the websocket with every pace it
// carries, and with none when the pace is forgotten.
func TestEventsCarryPaces(t *testing.T) {
	p := newProxy(t, 0, nil)
	ch := p.client().Events(t.Context())
	expect(t, ch, api.EventSnapshot, 0)

	next := time.Date(2026, 12, 1, 12, 0, 40, 0, time.UTC)
	sent := []api.Pace{
		{Scope: "credential", Requests: 30, WindowMS: 300_000, Next: &next},
		{Scope: "model", Model: "gemini-2.5-pro", Requests: 5},
	}
	id := p.emit(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2", Paces: sent})
	e := expect(t, ch, api.EventPaceChanged, id)
	if e.CredentialID != "g2" || e.Provider != "google" || len(e.Paces) != 2 {
		t.Fatalf("got %+v", e)
	}
	got := e.Paces
	if got[0].Next == nil || !got[0].Next.Equal(next) || got[0].Requests != 30 || got[0].WindowMS != 300_000 || got[0].Scope != "credential" ||
		got[1].Next != nil || got[1].Model != "gemini-2.5-pro" || got[1].Requests != 5 || got[1].Scope != "model" {
		t.Errorf("paces %+v, want %+v", got, sent)
	}

	id = p.emit(api.Event{Type: api.EventPaceChanged, Provider: "google", CredentialID: "g2"})
	if e := expect(t, ch, api.EventPaceChanged, id); len(e.Paces) != 0 {
		t.Errorf("forgotten: paces %+v", e.Paces)
	}
}
