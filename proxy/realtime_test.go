package proxy

import (
	"fmt"
	"io"
	"net"
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

// A client that stalls mid-upload is cut off at the body deadline (issue
// 27: a slow body upload had no deadline), with nothing sent upstream;
// the deadline is lifted once a body is in, so a long answer after a
// prompt body is not cut.
func TestRealTimeStalledBodyIsCutOff(t *testing.T) {
	e := newEnv(t, true, func(o *Options, _ *simOpts) { o.BodyTimeout = 300 * time.Millisecond })
	e.key("anthropic", "key-a")
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: %s\r\nContent-Length: 1000\r\n\r\n{\"model\":", testClientKey)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the connection was not closed by the server: %v", err)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls for a body that never came", n)
	}
	// A whole body, then an answer that takes longer than the deadline.
	e.up.Script("key-a", sim.Step{Delay: 600 * time.Millisecond})
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 200 {
		t.Fatalf("an answer slower than the body deadline: %d %s", resp.StatusCode, body)
	}
}
