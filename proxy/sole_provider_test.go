package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// The only credential answers 429 retry-after: 1. The cooldown this very
// request set is short enough to wait out, so the request waits and then
// succeeds instead of failing.
func TestSoleProviderWaitsOutShortCooldown(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.RateLimited("anthropic", time.Second))
	start := e.fake.Now()
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-attempts") != "2" {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	if w := e.fake.Now().Sub(start); w != time.Second {
		t.Fatalf("waited %v, want exactly the 1s cooldown", w)
	}
	ws := e.rec.of(api.EventWaitStarted)
	if len(ws) != 1 || ws[0].Kind != api.WaitSoleProvider || ws[0].WaitMS != 1000 {
		t.Fatalf("wait events %+v", ws)
	}
}

// A 30-day cooldown is not worth waiting: an immediate 429 with
// retry-after and words a person can act on, and no sleep.
func TestSoleProviderLongCooldownRefusesAtOnce(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	month := 30 * 24 * time.Hour
	e.up.Script("key-a", sim.RateLimited("anthropic", month))
	e.up.Script("key-b", sim.RateLimited("anthropic", month+time.Hour))
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2592000" {
		t.Fatalf("%d retry-after=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if !strings.Contains(body, "rate_limit_error") || !strings.Contains(body, "too long to wait") || !strings.Contains(body, "2 anthropic credentials") {
		t.Fatalf("message not actionable: %s", body)
	}
	if !e.fake.Now().Equal(epoch) {
		t.Fatal("the proxy slept")
	}
}
