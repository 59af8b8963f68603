package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// A timeout, then a 503 with no limit signal: the same credential is tried
// again in place after the configured pauses; nothing cools, nothing
// rotates.
func TestTransientRetriedInPlace(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) {
		// A real header timeout, short: the first step answers too late.
		o.Transport = NewTransport(200 * time.Millisecond)
	})
	e.key("anthropic", "key-a", "key-b")
	// Equal credentials are taken in the order added: key-a first.
	e.up.Script("key-a", sim.Step{Delay: 5 * time.Second}, sim.ServerError(503))

	start := e.fake.Now()
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-credential") != "key-a" || r.resp.Header.Get("x-subpool-attempts") != "3" {
		t.Fatalf("%d %v %s", r.resp.StatusCode, r.resp.Header, r.body)
	}
	if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-a,key-a" {
		t.Fatalf("upstream calls %s, want key-a three times", got)
	}
	if waited := e.fake.Now().Sub(start); waited != time.Second {
		t.Fatalf("waited %v on the clock, want 250ms+750ms", waited)
	}
	if n := len(e.rec.of(api.EventCooldownStarted, api.EventRotated)); n != 0 {
		t.Fatalf("%d cooldown/rotation events for a transient failure", n)
	}
	if st := e.state("key-a"); len(st.Cooldowns) != 0 || st.State != api.StateReady {
		t.Fatalf("key-a %+v", st)
	}
}

// When the retries run out the client gets a clear error naming the cause.
func TestTransientGivesUpWithCause(t *testing.T) {
	e := newEnv(t, false)
	e.key("openai", "key-o")
	e.up.Always("key-o", sim.ServerError(502))
	r := e.pump(e.async(context.Background(), "/v1/responses", `{"model":"gpt-5","input":"hi"}`))
	if r.resp.StatusCode != 502 || !strings.Contains(r.body, "failed 3 times") || !strings.Contains(r.body, "502") {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	if e.up.Calls("key-o") != 3 {
		t.Fatalf("%d calls, want 1 + 2 retries", e.up.Calls("key-o"))
	}
	if len(e.state("key-o").Cooldowns) != 0 {
		t.Fatal("a transient failure cooled the credential")
	}
}

// A client that goes away is never a reason to cool anything, and stops
// the request at once.
func TestAbortNeverCools(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.Step{Delay: time.Minute})
	e.up.Script("key-b", sim.Step{Delay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	ch := e.async(ctx, "/v1/messages", msgBody)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := e.up.WaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ch
	if err := e.up.WaitCancelled(wctx, 1); err != nil {
		t.Fatal("upstream request not cancelled:", err)
	}
	waitFinished(t, e)
	if n := len(e.up.Requests()); n != 1 {
		t.Fatalf("%d upstream calls after the client left", n)
	}
	for _, id := range []string{"key-a", "key-b"} {
		if st := e.state(id); len(st.Cooldowns) != 0 || len(st.Parks) != 0 {
			t.Fatalf("%s changed: %+v", id, st)
		}
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 1 || fin[0].Class != "aborted" {
		t.Fatalf("request_finished %+v", fin)
	}
}

// waitFinished waits for the proxy to finish the request it is serving.
func waitFinished(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.serving.Wait(ctx); err != nil {
		t.Fatal("proxy still serving:", err)
	}
}
