package proxy

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// 529, 529, then 200 on the same credential: the proxy waits on that
// credential (rotation does not help an overloaded model) and nothing cools.
func TestCapacityWaitsOnSameCredential(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.Overloaded(), sim.Overloaded())
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-credential") != "key-a" {
		t.Fatalf("%d %v %s", r.resp.StatusCode, r.resp.Header, r.body)
	}
	if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-a,key-a" {
		t.Fatalf("upstream calls %s", got)
	}
	waits := e.rec.of(api.EventWaitStarted)
	if len(waits) != 2 || waits[0].Kind != api.WaitCapacity || waits[0].CredentialID != "key-a" {
		t.Fatalf("waits %+v", waits)
	}
	if len(e.rec.of(api.EventCooldownStarted)) != 0 || len(e.state("key-a").Cooldowns) != 0 {
		t.Fatal("capacity cooled a credential")
	}
}

// advancingTransport moves the fake clock by d on every upstream call: a
// slow upstream, on the test's clock.
type advancingTransport struct {
	next http.RoundTripper
	clk  *clock.Fake
	d    time.Duration
	n    atomic.Int32
}

func (a *advancingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	a.n.Add(1)
	a.clk.Advance(a.d)
	return a.next.RoundTrip(r)
}

// The budget is wall-clock from the first 529, and upstream time counts:
// with a 5 m budget and an upstream that takes 2 m per answer, the proxy
// gives up after the budget with its own final 503, rather than waiting
// 5 m on top of the upstream's time.
func TestCapacityBudgetCountsUpstreamTime(t *testing.T) {
	var at *advancingTransport
	e := newEnv(t, false, func(o *Options, _ *simOpts) {
		at = &advancingTransport{next: NewTransport(time.Minute), d: 2 * time.Minute}
		o.Transport = at
	})
	at.clk = e.fake
	e.key("anthropic", "key-a")
	e.up.Always("key-a", sim.Overloaded())
	start := e.fake.Now()
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 503 || r.resp.Header.Get("X-Should-Retry") != "false" || strings.Contains(r.body, `"type":"overloaded_error"`) {
		t.Fatalf("%d %v %s", r.resp.StatusCode, r.resp.Header, r.body)
	}
	// First answer at +2m sets the deadline at +7m. Each round costs a
	// wait then 2 m upstream; no wait may start past the deadline.
	if el := e.fake.Now().Sub(start); el > 7*time.Minute+2*time.Minute {
		t.Fatalf("spent %v, budget 5m after the first 529 at +2m", el)
	}
	if n := at.n.Load(); n < 2 || n > 4 {
		t.Fatalf("%d upstream calls", n)
	}
}

// capacity_max = 0 turns the wait off: the 529 goes to the client as is.
func TestCapacityOff(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) { o.CapacityMax = 0 })
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.Overloaded())
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 529 || e.up.Calls("key-a") != 1 || !strings.Contains(body, "overloaded_error") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// A client that leaves during a capacity wait: the wait ends at once and
// the upstream hears nothing more.
func TestCapacityWaitAbortedByClient(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Always("key-a", sim.Overloaded())
	ctx, cancel := context.WithCancel(context.Background())
	ch := e.async(ctx, "/v1/messages", msgBody)
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	// The proxy is now waiting on the clock, which nobody advances.
	if err := e.fake.BlockUntil(bctx, 1); err != nil {
		t.Fatal(err)
	}
	for len(e.rec.of(api.EventWaitStarted)) == 0 {
		if err := bctx.Err(); err != nil {
			t.Fatal("no wait started")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-ch
	waitFinished(t, e)
	if n := e.up.Calls("key-a"); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
	ended := e.rec.of(api.EventWaitEnded)
	if len(ended) != 1 || ended[0].Outcome != "aborted" {
		t.Fatalf("wait_ended %+v", ended)
	}
}

// An overload reported inside a 200 stream, before any content, is
// handled like the 529 it stands for: held back and retried.
func TestStreamErrorBeforeContentIsRetried(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.StreamOverloaded("anthropic"))
	r := e.pump(e.async(context.Background(), "/v1/messages", `{"model":"claude-sonnet-4-5","stream":true,"messages":[]}`))
	if r.resp.StatusCode != 200 || strings.Contains(r.body, "overloaded") || !strings.Contains(r.body, "message_stop") {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	if e.up.Calls("key-a") != 2 {
		t.Fatalf("%d calls", e.up.Calls("key-a"))
	}
}
