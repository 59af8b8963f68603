package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// The main behaviours once more on the real clock, with times shortened to
// about a second: what the fake clock proves, the wall clock must too.

func TestRealTimeRotationAndSoleWait(t *testing.T) {
	e := newEnv(t, true, func(o *Options, _ *simOpts) { o.SoleProviderMax = 3 * time.Second })
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.RateLimited("anthropic", time.Second))
	e.up.Script("key-b", sim.RateLimited("anthropic", time.Second))
	// Both cool for 1 s during this request; it waits and is served.
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-attempts") != "3" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-b,key-a" && got != "key-a,key-b,key-b" {
		t.Fatalf("upstream calls %s", got)
	}
	if n := len(e.rec.of(api.EventWaitStarted)); n != 1 {
		t.Fatalf("%d waits", n)
	}
	// The third call came after the announced reset, never inside it.
	recs := e.up.Requests()
	if gap := recs[2].Time.Sub(recs[0].Time); gap < time.Second {
		t.Fatalf("called again %v after a 1s reset", gap)
	}
}

func TestRealTimeCapacityWait(t *testing.T) {
	e := newEnv(t, true, func(o *Options, _ *simOpts) { o.CapacityMax = 5 * time.Second })
	e.key("anthropic", "key-a")
	over := sim.Overloaded()
	over.Header = map[string]string{"retry-after": "1"}
	e.up.Script("key-a", over)
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 200 || e.up.Calls("key-a") != 2 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	recs := e.up.Requests()
	if gap := recs[1].Time.Sub(recs[0].Time); gap < time.Second {
		t.Fatalf("retried %v after a 1s capacity hint", gap)
	}
}

func TestRealTimeTransientRetry(t *testing.T) {
	e := newEnv(t, true, func(o *Options, _ *simOpts) {
		o.TransientBackoff = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	})
	e.key("openai", "key-o")
	e.up.Script("key-o", sim.ServerError(503), sim.ServerError(502))
	resp, body := e.post("/v1/responses", `{"model":"gpt-5","input":"hi"}`)
	if resp.StatusCode != 200 || e.up.Calls("key-o") != 3 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
