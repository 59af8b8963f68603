package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/policy"
)

// Stream deadlines (issue 43): an upstream that sent 200 and its SSE
// headers and then nothing held the client in silence for 700 s, with a
// second key that would have answered never tried; one that stalled
// after some content held it without end.

const streamBody = `{"model":"claude-sonnet-4-5","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

// stallEnv is an env whose upstream plays st's stalls.
func stallEnv(t *testing.T, realTime bool, st *sim.Stalls, opts ...envOpt) *env {
	return newEnv(t, realTime, append([]envOpt{func(_ *Options, so *simOpts) { so.BeforeEvent = st.Hook }}, opts...)...)
}

// advanceOnStall waits until the upstream has stalled n times in all and
// the proxy's deadline timer is armed, then moves the fake clock by d.
func (e *env) advanceOnStall(st *sim.Stalls, n int, d time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for st.Count() < n {
		if ctx.Err() != nil {
			e.t.Fatalf("the upstream stalled %d times, want %d", st.Count(), n)
		}
		time.Sleep(time.Millisecond)
	}
	if err := e.fake.BlockUntil(ctx, 1); err != nil {
		e.t.Fatal("no deadline armed on the stalled answer")
	}
	e.fake.Advance(d)
}

func TestStallAtTheHeadGoesToAnotherKey(t *testing.T) {
	def := policy.Defaults()
	for _, at := range []struct {
		name  string
		index int
	}{
		{"nothing after the headers", 0},
		// After message_start the client already has the headers (commit)
		// and no byte of the body: still retried.
		{"after message_start", 1},
	} {
		t.Run(at.name, func(t *testing.T) {
			var st sim.Stalls
			e := stallEnv(t, false, &st)
			e.key("anthropic", "key-a", "key-b")
			st.StallAt("key-a", at.index)
			ch := e.async(context.Background(), "/v1/messages", streamBody)
			e.advanceOnStall(&st, 1, def.FirstEventTimeout)
			r := <-ch
			if r.resp == nil || r.resp.StatusCode != 200 || !strings.Contains(r.body, "message_stop") {
				t.Fatalf("want key-b's whole answer: %v %s", r.resp, r.body)
			}
			if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-b" {
				t.Fatalf("upstream calls %s, want key-a (stalled) then key-b", got)
			}
			if strings.Count(r.body, "event: message_start") != 1 || strings.Contains(r.body, "event: error") {
				t.Fatalf("the stalled answer's preamble reached the client: %s", r.body)
			}
			if st := e.state("key-a"); !strings.Contains(st.Reason, "first_event_timeout") || st.State != "cooling" {
				t.Fatalf("key-a is %s (%q): the pool did not learn of the stall", st.State, st.Reason)
			}
		})
	}
}

// The only key stalls: the client gets subpool's words naming the
// setting at the deadline, not a hang, and the key is not asked again.
func TestStallOnTheOnlyKeySaysSo(t *testing.T) {
	var st sim.Stalls
	e := stallEnv(t, false, &st)
	e.key("anthropic", "key-a")
	st.StallAt("key-a", 0)
	ch := e.async(context.Background(), "/v1/messages", streamBody)
	e.advanceOnStall(&st, 1, policy.Defaults().FirstEventTimeout)
	r := <-ch
	if r.resp == nil || r.resp.StatusCode < 500 || !strings.Contains(r.body, "retry.first_event_timeout") {
		t.Fatalf("%v %s", r.resp, r.body)
	}
	if n := e.up.Calls("key-a"); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
}

// A stall after content reached the client ends the stream with the
// wire's error event, so the client's own retry starts at once; nothing
// is retried upstream (the client has bytes of this answer).
func TestStallMidStreamEndsWithAnErrorEvent(t *testing.T) {
	for _, c := range []struct {
		name, path, body, seen, want string
		index                        int
	}{
		{"anthropic", "/v1/messages", streamBody, "content_block_delta", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"", 4},
		{"openai chat", "/v1/chat/completions", `{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "hello", "data: {\"error\":{\"message\":", 2},
		{"openai responses", "/v1/responses", `{"model":"gpt-5","stream":true,"input":"hi"}`, "output_text.delta", "event: error\ndata: {\"code\":\"upstream_stalled\"", 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			var st sim.Stalls
			e := stallEnv(t, false, &st)
			e.key("anthropic", "key-a", "key-b")
			e.key("openai", "key-o", "key-p")
			st.StallAt("key-a", c.index)
			st.StallAt("key-o", c.index)
			resp, body := e.streamUntil(c.path, c.body, c.seen)
			e.advanceOnStall(&st, 1, policy.Defaults().IdleTimeout)
			rest, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			all := body + string(rest)
			if resp.StatusCode != 200 || !strings.Contains(all, c.want) || !strings.Contains(all, "retry.idle_timeout") {
				t.Fatalf("%d: the body ends without the stall's error event (want %q):\n%s", resp.StatusCode, c.want, all)
			}
			if n := len(e.up.Requests()); n != 1 {
				t.Fatalf("%d upstream calls, want 1: the client has bytes of the answer", n)
			}
			// The client's own retry, which follows at once, goes to the
			// other key.
			resp2, body2 := e.post(c.path, c.body)
			if seen := e.credsSeen(); resp2.StatusCode != 200 || len(seen) != 2 || seen[1] == seen[0] {
				t.Fatalf("the retry: %d %v %s", resp2.StatusCode, seen, body2)
			}
		})
	}
}

// streamUntil posts a stream request and reads its body until seen has
// arrived: the client has content of the answer.
func (e *env) streamUntil(path, body, seen string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", testClientKey)
	req.Header.Set("Authorization", "Bearer "+testClientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), seen) {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			e.t.Fatalf("the stream ended before %q: %v\n%s", seen, err, got)
		}
	}
	return resp, string(got)
}

// A deadline of 0 (config "0s", a negative value in Options) is none:
// the stall lasts until the client leaves.
func TestDeadlinesOff(t *testing.T) {
	var st sim.Stalls
	e := stallEnv(t, false, &st, func(o *Options, _ *simOpts) { o.FirstEventTimeout, o.IdleTimeout = -1, -1 })
	e.key("anthropic", "key-a", "key-b")
	st.StallAt("key-a", 0)
	ctx, cancel := context.WithCancel(context.Background())
	ch := e.async(ctx, "/v1/messages", streamBody)
	for st.Count() < 1 {
		time.Sleep(time.Millisecond)
	}
	e.fake.Advance(time.Hour)
	select {
	case r := <-ch:
		t.Fatalf("answered with the deadlines off: %v %s", r.resp, r.body)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-ch
}

// The same on the real clock, with the deadlines shortened, over real
// HTTP to an upstream that really stalls.
func TestRealTimeStalls(t *testing.T) {
	short := func(o *Options, _ *simOpts) {
		o.FirstEventTimeout, o.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond
	}
	t.Run("at the head", func(t *testing.T) {
		var st sim.Stalls
		e := stallEnv(t, true, &st, short)
		e.key("anthropic", "key-a", "key-b")
		st.StallAt("key-a", 0)
		resp, body := e.post("/v1/messages", streamBody)
		if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, "message_stop") {
			t.Fatalf("%v %s", resp, body)
		}
		if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-b" {
			t.Fatalf("upstream calls %s", got)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		var st sim.Stalls
		e := stallEnv(t, true, &st, short)
		e.key("anthropic", "key-a")
		st.StallAt("key-a", 4)
		resp, body := e.post("/v1/messages", streamBody)
		if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, "content_block_delta") || !strings.Contains(body, "overloaded_error") {
			t.Fatalf("%v %s", resp, body)
		}
	})
}

// Gemini CLI gives up on headers at 60 s and asks again by itself, and on
// the Gemini wire subpool holds even the status line until the first
// chunk: for it the first-event deadline is at most geminiCLIHead.
func TestGeminiCLIHeadDeadline(t *testing.T) {
	var st sim.Stalls
	e := stallEnv(t, false, &st, withGoogle)
	e.geminiKey("k1", "k2")
	st.StallAt("AIza-k1", 0)
	ch := e.async(context.Background(), "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody, geminiHeaders(false)...)
	e.advanceOnStall(&st, 1, geminiCLIHead)
	r := <-ch
	if r.resp == nil || r.resp.StatusCode != 200 || !strings.Contains(r.body, "candidates") {
		t.Fatalf("%v %s", r.resp, r.body)
	}
	if got := e.up.Calls("AIza-k1"); got != 1 || e.up.Calls("AIza-k2") != 1 {
		t.Fatalf("calls k1 %d, k2 %d", got, e.up.Calls("AIza-k2"))
	}
	// Another client of the wire keeps the configured deadline.
	if first, _ := (&run{request: &request{pol: policy.Defaults(), tool: "other"}, route: route{prov: &Provider{Wire: "gemini"}, wire: WireGemini}}).deadlines(); first != policy.Defaults().FirstEventTimeout {
		t.Fatalf("first-event deadline for another client: %v", first)
	}
}
