package proxy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/pool"
)

// Requests that find the only credential at its in-flight limit wait for
// it and are woken by its release, each with one wait_started/wait_ended
// pair however long the wait (the old loop polled every 100 ms and sent a
// pair per poll). Real time, shortened.
func TestBusyWaitIsOneEventPair(t *testing.T) {
	e := newEnv(t, true)
	e.auth.secrets["key-a"] = "key-a"
	e.pool.Add(pool.Credential{ID: "key-a", Provider: "anthropic", Label: "key-a", Kind: api.KindAPIKey, MaxInFlight: 1})
	e.up.Script("key-a", sim.Step{Delay: 400 * time.Millisecond})

	first := e.async(context.Background(), "/v1/messages", msgBody)
	for len(e.up.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	const waiters = 4
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, body := e.post("/v1/messages", msgBody); resp == nil || resp.StatusCode != 200 {
				t.Errorf("waiter: %v %s", resp, body)
			}
		}()
	}
	if r := <-first; r.resp.StatusCode != 200 {
		t.Fatalf("first: %d", r.resp.StatusCode)
	}
	wg.Wait()
	started, ended := e.rec.of(api.EventWaitStarted), e.rec.of(api.EventWaitEnded)
	if len(started) != waiters || len(ended) != waiters {
		t.Fatalf("%d wait_started, %d wait_ended for %d waiting requests", len(started), len(ended), waiters)
	}
	for _, ev := range ended {
		if ev.Outcome != "ready" {
			t.Errorf("wait ended %q", ev.Outcome)
		}
	}
}

// 100 concurrent requests meet the same 429 on one credential: one
// cooldown, announced once.
func TestConcurrent429sAnnounceOneCooldown(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a", "key-b")
	e.up.Always("key-a", sim.RateLimited("anthropic", 30*time.Second))
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, body := e.post("/v1/messages", msgBody); resp == nil || resp.StatusCode != 200 {
				t.Errorf("%v %s", resp, body)
			}
		}()
	}
	wg.Wait()
	var onA int
	for _, ev := range e.rec.of(api.EventCooldownStarted) {
		if ev.CredentialID == "key-a" {
			onA++
		}
	}
	if onA != 1 {
		t.Fatalf("%d cooldown_started for key-a, want 1", onA)
	}
}

// Every event about a request names the client key that made it: a
// rotation and a wait are attributed to their tool as request_finished is.
func TestRequestEventsNameTheClient(t *testing.T) {
	e := newEnv(t, false, withClients(twoClients()))
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.RateLimited("anthropic", 0))
	e.up.Script("key-b", sim.RateLimited("anthropic", 0))
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody, "x-api-key", keyClaude))
	if r.resp.StatusCode != 200 {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	evs := e.rec.of(api.EventRotated, api.EventWaitStarted, api.EventWaitEnded, api.EventRequestFinished)
	seen := map[api.EventType]bool{}
	for _, ev := range evs {
		seen[ev.Type] = true
		if ev.Client != "claude-code" {
			t.Errorf("%s names client %q", ev.Type, ev.Client)
		}
	}
	if !seen[api.EventRotated] || !seen[api.EventWaitStarted] || !seen[api.EventRequestFinished] {
		t.Fatalf("events seen %v", seen)
	}
}
