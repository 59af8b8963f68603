package proxy

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// The answers count a key's budget down; the request after the last one
// goes to another key at once, without the upstream ever saying 429, and
// so does the one after it, though the spent key is now the least
// recently used.
func TestBudgetMovesOnBeforeA429(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	const quota = 3
	e.up.SetQuota("key-a", sim.Quota{Requests: quota, Window: time.Minute, Announce: true})
	for i := range quota {
		resp, body := e.post("/v1/messages", msgBody)
		left := resp.Header.Get("anthropic-ratelimit-requests-remaining")
		if resp.StatusCode != 200 || left != strconv.Itoa(quota-1-i) {
			t.Fatalf("request %d: %d, %q left: %s", i+1, resp.StatusCode, left, body)
		}
	}
	e.key("anthropic", "key-b")
	for i := range 2 {
		resp, body := e.post("/v1/messages", msgBody)
		if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "key-b" || resp.Header.Get("x-subpool-attempts") != "1" {
			t.Fatalf("request %d after the budget: %d %v %s", quota+1+i, resp.StatusCode, resp.Header, body)
		}
	}
	for _, r := range e.up.Requests() {
		if r.Status == 429 {
			t.Fatalf("the upstream answered 429 to %s at %v", r.Credential, r.Time)
		}
	}
	if got, want := strings.Join(e.credsSeen(), ","), "key-a,key-a,key-a,key-b,key-b"; got != want {
		t.Fatalf("upstream calls %s, want %s", got, want)
	}
	// The budget is the model's: key-a is held for claude-sonnet-4-5, not
	// as a whole.
	st := e.state("key-a")
	if st.State != api.StateReady || len(st.Cooldowns) != 1 || !st.Cooldowns[0].Until.Equal(epoch.Add(time.Minute)) ||
		st.Cooldowns[0].Scope != "model" || st.Cooldowns[0].Model != "claude-sonnet-4-5" ||
		!strings.HasPrefix(st.Cooldowns[0].Reason, "budget spent") {
		t.Fatalf("key-a %s %+v, want claude-sonnet-4-5 cooling until the window's end", st.State, st.Cooldowns)
	}
	if st.Counters.RateLimits != 0 {
		t.Fatalf("key-a counted %d rate limits", st.Counters.RateLimits)
	}
}

// With no other key, the request after the budget sleeps until the
// announced reset, once, and is served by the refilled window: no
// polling, no 429.
func TestSoleCredentialWaitsForItsBudgetReset(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.SetQuota("key-a", sim.Quota{Requests: 2, Window: time.Minute, Announce: true})
	for range 2 {
		if resp, body := e.post("/v1/messages", msgBody); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	e.fake.Advance(20 * time.Second)
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-attempts") != "1" ||
		r.resp.Header.Get("anthropic-ratelimit-requests-remaining") != "1" {
		t.Fatalf("%d %v %s", r.resp.StatusCode, r.resp.Header, r.body)
	}
	if now := e.fake.Now(); !now.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("served at %v, want at the reset %v", now, epoch.Add(time.Minute))
	}
	ws := e.rec.of(api.EventWaitStarted)
	if len(ws) != 1 || ws[0].Kind != api.WaitSoleProvider || ws[0].WaitMS != 40000 {
		t.Fatalf("wait events %+v, want one sole-provider wait of 40s", ws)
	}
	cds := e.rec.of(api.EventCooldownStarted, api.EventCooldownEnded)
	if len(cds) != 2 || !strings.HasPrefix(cds[0].Reason, "budget spent") || cds[1].Type != api.EventCooldownEnded {
		t.Fatalf("cooldown events %+v, want the budget's start and end", cds)
	}
	for _, rec := range e.up.Requests() {
		if rec.Status == 429 {
			t.Fatalf("the upstream answered 429 at %v", rec.Time)
		}
	}
	if n := len(e.up.Requests()); n != 3 {
		t.Fatalf("%d upstream calls, want 3", n)
	}
}

// Budgets are per model, as OpenAI's request limits are (and Anthropic's
// per model class): on one key, a model whose budget is spent waits for
// its reset, while another model is served at once, and that model's
// answers, which report its own room, do not reopen the spent one.
func TestBudgetIsPerModel(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	const opus = `{"model":"claude-opus-4-1","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	e.up.Script("key-a", sim.Step{Model: "claude-opus-4-1", Header: map[string]string{
		"anthropic-ratelimit-requests-remaining": "0",
		"anthropic-ratelimit-requests-reset":     "{{rfc3339+60}}",
	}})
	if resp, body := e.post("/v1/messages", opus); resp.StatusCode != 200 {
		t.Fatalf("opus: %d %s", resp.StatusCode, body)
	}
	st := e.state("key-a")
	if st.State != api.StateReady || len(st.Cooldowns) != 1 || st.Cooldowns[0].Model != "claude-opus-4-1" ||
		!st.Cooldowns[0].Until.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("key-a %s %+v, want opus's budget spent until the reset", st.State, st.Cooldowns)
	}

	// Sonnet goes at once, twice: its answers report sonnet's own room.
	for i := range 2 {
		r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
		if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-attempts") != "1" ||
			r.resp.Header.Get("anthropic-ratelimit-requests-remaining") == "0" {
			t.Fatalf("sonnet %d: %d %v %s", i+1, r.resp.StatusCode, r.resp.Header, r.body)
		}
	}
	if now := e.fake.Now(); !now.Equal(epoch) {
		t.Fatalf("sonnet served at %v, want at once (%v)", now, epoch)
	}
	if ws := e.rec.of(api.EventWaitStarted); len(ws) != 0 {
		t.Fatalf("waits %+v, want none for sonnet", ws)
	}

	// Opus still waits for its reset: sonnet's reports are not its budget.
	r := e.pump(e.async(context.Background(), "/v1/messages", opus))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-attempts") != "1" {
		t.Fatalf("opus after the reset: %d %v %s", r.resp.StatusCode, r.resp.Header, r.body)
	}
	if now := e.fake.Now(); !now.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("opus served at %v, want at its reset %v", now, epoch.Add(time.Minute))
	}
	ws := e.rec.of(api.EventWaitStarted)
	if len(ws) != 1 || ws[0].Model != "claude-opus-4-1" || ws[0].WaitMS != 60000 {
		t.Fatalf("waits %+v, want one of 60s for opus", ws)
	}
	for _, rec := range e.up.Requests() {
		if rec.Status == 429 {
			t.Fatalf("the upstream answered 429 at %v", rec.Time)
		}
	}
}
