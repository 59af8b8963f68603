package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// A pool-wide outage whose end is unknown (bare 429s on every key): while
// a request waits for the provider, at most one probe goes every 2 s; once
// nobody is asking, none goes at all (issue 27's decision: probes only
// while a request is waiting for that provider).
func TestOutageProbesOnlyWhileARequestWaits(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) { o.SoleProviderMax = 10 * time.Second })
	e.key("anthropic", "key-a", "key-b")
	bare := sim.Step{Status: 429, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}`}
	e.up.Always("key-a", bare)
	e.up.Always("key-b", bare)
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 429 {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	reqs := e.up.Requests()
	// Both keys once, then the probes of a 10 s wait.
	if n := len(reqs); n < 2+4 || n > 2+5 {
		t.Fatalf("%d upstream calls for a 10 s wait: want both keys, then one probe every 2 s", n)
	}
	for i := 3; i < len(reqs); i++ {
		if gap := reqs[i].Time.Sub(reqs[i-1].Time); gap < 2*time.Second {
			t.Fatalf("probes %d and %d %v apart, want at least 2 s", i-1, i, gap)
		}
	}
	// Nobody asks: a minute passes (the keys' guesses end meanwhile) and
	// no call goes out.
	before := len(reqs)
	e.fake.Advance(time.Minute)
	if n := len(e.up.Requests()); n != before {
		t.Fatalf("%d upstream calls while no request waited", n-before)
	}
}
