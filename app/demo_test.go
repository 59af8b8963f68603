package app

import (
	"context"
	"github.com/subpool/subpool/internal/freeport"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// One turn of the demo's story shows every decision it promises, the dead
// login included: a rate limit and its rotation, a capacity wait, a blip
// retried in place, and a login that has to be renewed by hand. Gemini
// cools and waits like the others.
func TestDemoTellsItsWholeStory(t *testing.T) {
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	sub, _ := d.srv.Hub().Subscribe(0, 4096)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	go d.traffic(ctx, 150*time.Millisecond)

	want := map[api.EventType]bool{
		api.EventCooldownStarted: false, api.EventRotated: false, api.EventWaitStarted: false,
		api.EventRetried: false, api.EventReloginRequired: false,
	}
	// Gemini's own beats: its login's rate limit, its overloaded model.
	gemini := map[api.EventType]bool{api.EventCooldownStarted: false, api.EventWaitStarted: false}
	missing := func() (out []string) {
		for k, seen := range want {
			if !seen {
				out = append(out, string(k))
			}
		}
		for k, seen := range gemini {
			if !seen {
				out = append(out, "google "+string(k))
			}
		}
		return out
	}
	for len(missing()) > 0 {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatal("the event stream closed")
			}
			if _, ok := want[ev.Type]; ok {
				want[ev.Type] = true
			}
			if _, ok := gemini[ev.Type]; ok && ev.Provider == "google" && ev.CredentialID != "" &&
				(ev.Type != api.EventWaitStarted || ev.Kind == api.WaitCapacity) {
				gemini[ev.Type] = true
			}
			if ev.Type == api.EventReloginRequired && ev.CredentialID != d.ids["claude-pro"] {
				t.Fatalf("the wrong login died: %+v", ev)
			}
		case <-ctx.Done():
			t.Fatalf("never shown: %v", missing())
		}
	}
}
