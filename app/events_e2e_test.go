package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// A scripted scenario through a real server — a 429 with a reset, the
// rotation it causes, a capacity wait, a revoked key — reaches a websocket
// client as exactly the expected decisions, in order, ids increasing; and
// no event or status body carries a secret.
func TestEventStreamScenario(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	for _, k := range []struct{ key, label string }{{keyA, "alpha"}, {keyB, "bravo"}} {
		if code, out, errs := cli(t, k.key, "add-key", "anthropic", "--label", k.label, "--home", home); code != 0 {
			t.Fatal(out, errs)
		}
	}
	s := startHome(t, home, &logBuf{})
	ids := map[string]string{}
	for _, p := range daemonStatus(s).Providers {
		for _, c := range p.Credentials {
			ids[c.Label] = c.ID
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &client.Client{Addr: s.Addr(), Token: s.AdminToken()}
	evs := c.Events(ctx)
	first := <-evs
	if first.Type != api.EventSnapshot || first.Snapshot == nil {
		t.Fatalf("first message %+v", first)
	}

	over := sim.Overloaded()
	over.Header = map[string]string{"retry-after": "0.2"}
	up.Script(keyA, sim.RateLimited("anthropic", time.Hour)) // alpha: 429, reset in 1h → rotate to bravo
	up.Script(keyB, over, sim.Step{})                        // bravo: 529 then served
	resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	up.Script(keyB, sim.Unauthorized("anthropic")) // bravo revoked: parked, nothing left
	resp, _ = proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","messages":[]}`)
	if resp.StatusCode != 429 {
		t.Fatalf("with alpha cooling and bravo parked: %d", resp.StatusCode)
	}

	want := []struct {
		typ   api.EventType
		cred  string
		check func(api.Event) bool
	}{
		{api.EventCooldownStarted, "alpha", func(e api.Event) bool { return e.Until != nil && e.Scope == "credential" && e.Reason != "" }},
		{api.EventRotated, "bravo", func(e api.Event) bool { return e.From == ids["alpha"] && e.To == ids["bravo"] }},
		{api.EventWaitStarted, "bravo", func(e api.Event) bool { return e.Kind == api.WaitCapacity }},
		{api.EventWaitEnded, "bravo", func(e api.Event) bool { return e.Kind == api.WaitCapacity && e.Outcome == "ready" }},
		{api.EventRequestFinished, "bravo", func(e api.Event) bool { return e.Status == 200 && e.Attempts == 3 && e.Class == "ok" }},
		{api.EventParked, "bravo", nil},
		{api.EventReloginRequired, "bravo", nil},
		{api.EventRequestFinished, "", func(e api.Event) bool { return e.Status == 429 }},
	}
	var raw strings.Builder
	got := collectDecisions(t, ctx, evs, len(want), &raw)
	for i, w := range want {
		e := got[i]
		if e.Type != w.typ || (w.cred != "" && e.CredentialID != ids[w.cred]) || (w.check != nil && !w.check(e)) {
			t.Fatalf("event %d = %+v, want %s on %s", i, e, w.typ, w.cred)
		}
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	raw.Write(b)
	for _, secret := range []string{keyA, keyB, s.ClientKey(), s.AdminToken()} {
		if strings.Contains(raw.String(), secret) {
			t.Fatal("a secret is in an event or the status")
		}
	}
}

// collectDecisions reads evs until n decision events came (the kinds
// TestEventStreamScenario checks), with ids increasing, and writes every
// event's JSON to raw.
func collectDecisions(t *testing.T, ctx context.Context, evs <-chan api.Event, n int, raw *strings.Builder) []api.Event {
	t.Helper()
	var got []api.Event
	var last uint64
	for len(got) < n {
		select {
		case e := <-evs:
			b, _ := json.Marshal(e)
			raw.Write(b)
			if e.ID <= last {
				t.Fatalf("ids not increasing: %d after %d", e.ID, last)
			}
			last = e.ID
			switch e.Type {
			case api.EventCooldownStarted, api.EventRotated, api.EventWaitStarted, api.EventWaitEnded,
				api.EventRequestFinished, api.EventParked, api.EventReloginRequired:
				got = append(got, e)
			}
		case <-ctx.Done():
			t.Fatalf("only got %d of %d events: %+v", len(got), n, got)
		}
	}
	return got
}
