package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// A 429 with retry-after: 5 on A: one call to A, then B serves the same
// request at once; A cools for the upstream's 5 s, not the ladder's 30 s.
func TestRateLimitRotatesAndHonoursRetryAfter(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.RateLimited("anthropic", 5*time.Second))

	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "key-b" || resp.Header.Get("x-subpool-attempts") != "2" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-b" {
		t.Fatalf("upstream calls %s", got)
	}
	if !e.fake.Now().Equal(epoch) {
		t.Fatalf("the proxy slept: clock at %v", e.fake.Now())
	}
	cds := e.state("key-a").Cooldowns
	if len(cds) != 1 || !cds[0].Until.Equal(epoch.Add(5*time.Second)) {
		t.Fatalf("key-a cooldowns %+v, want until +5s", cds)
	}
	rot := e.rec.of(api.EventRotated)
	if len(rot) != 1 || rot[0].From != "key-a" || rot[0].To != "key-b" || rot[0].Reason == "" {
		t.Fatalf("rotated events %+v", rot)
	}
	started := e.rec.of(api.EventCooldownStarted)
	if len(started) != 1 || started[0].CredentialID != "key-a" || started[0].Scope != "credential" {
		t.Fatalf("cooldown events %+v", started)
	}
}

// Three 429s without hints on the same key climb 30 s, 60 s, 5 m; after
// 10 idle minutes the ladder starts over. The client is told to come back
// at the next probe of the limit (every 2 s while every credential cools
// on a guess), not at the end of the guess.
func TestLadderThroughTheProxy(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) { o.SoleProviderMax = 0 })
	e.key("anthropic", "key-a")
	want := []time.Duration{30 * time.Second, 60 * time.Second, 5 * time.Minute}
	for i, d := range want {
		e.up.Script("key-a", sim.RateLimited("anthropic", 0))
		start := e.fake.Now()
		resp, body := e.post("/v1/messages", msgBody)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
			t.Fatalf("hit %d: %d retry-after=%q %s", i+1, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		cd := e.state("key-a").Cooldowns[0]
		if !cd.Until.Equal(start.Add(d)) || cd.Step != i+1 {
			t.Fatalf("hit %d: cooldown %+v, want %v step %d", i+1, cd, d, i+1)
		}
		e.fake.Advance(d)
	}
	e.fake.Advance(10 * time.Minute)
	e.up.Script("key-a", sim.RateLimited("anthropic", 0))
	start := e.fake.Now()
	e.post("/v1/messages", msgBody)
	if cd := e.state("key-a").Cooldowns[0]; !cd.Until.Equal(start.Add(30*time.Second)) || cd.Step != 1 {
		t.Fatalf("after idle: %+v", cd)
	}
}

// A credential whose reset the upstream announced gets no call before that
// reset: across a busy run, zero wasted calls. The announcement is a 429
// naming its reset or, since the pool keeps request budgets, an answer
// whose remaining count reached 0; either starts a cooldown.
func TestNoCallsInsideAnnouncedCooldown(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b", "key-c")
	e.up.SetQuota("key-a", sim.Quota{Requests: 2, Window: time.Minute, Announce: true})
	e.up.SetQuota("key-b", sim.Quota{Requests: 3, Window: 2 * time.Minute, Announce: true})
	for i := 0; i < 60; i++ {
		resp, body := e.post("/v1/messages", msgBody)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		e.fake.Advance(5 * time.Second)
	}
	// Replay the upstream's log: once a cooldown began on a credential, it
	// must not be called before the cooldown's end. The requests are 5 s
	// apart and each one's events carry its own instant, so a cooldown
	// applies from the next request on.
	cds := e.rec.of(api.EventCooldownStarted)
	bit := map[string]bool{}
	for _, r := range e.up.Requests() {
		for _, cd := range cds {
			if cd.CredentialID == r.Credential && cd.Until != nil && cd.Time.Before(r.Time) && r.Time.Before(*cd.Until) {
				t.Fatalf("wasted call to %s at %v, inside a cooldown until %v (%s)", r.Credential, r.Time, *cd.Until, cd.Reason)
			}
		}
		if r.Status == 429 {
			t.Errorf("429 on %s at %v: its budget said it was spent", r.Credential, r.Time)
		}
	}
	for _, cd := range cds {
		bit[cd.CredentialID] = true
	}
	if !bit["key-a"] || !bit["key-b"] {
		t.Fatalf("the quotas never bit (cooldowns on %v): the test proves nothing", bit)
	}
}
