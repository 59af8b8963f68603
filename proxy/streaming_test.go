package proxy

import (
	"bufio"
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// SSE reaches the client event by event: the client reads the first
// content event while the upstream is still holding back the last one.
func TestStreamArrivesEventByEvent(t *testing.T) {
	gate := make(chan struct{})
	e := newEnv(t, true, func(_ *Options, so *simOpts) {
		so.BeforeEvent = func(ctx context.Context, ev sim.Event) error {
			if ev.Name == "message_stop" {
				select {
				case <-gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
	})
	e.key("anthropic", "key-a")
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","stream":true,"messages":[]}`))
	req.Header.Set("x-api-key", testClientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("content-type %q", resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sawDelta := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: content_block_delta") {
			sawDelta = true
			break
		}
	}
	if !sawDelta {
		t.Fatal("no delta before the upstream finished")
	}
	close(gate) // only now may the upstream send its last event
	rest := ""
	for sc.Scan() {
		rest += sc.Text() + "\n"
	}
	if !strings.Contains(rest, "message_stop") {
		t.Fatal("stream did not finish")
	}
}

// A client that disconnects mid-stream cancels the upstream request.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	e := newEnv(t, true, func(_ *Options, so *simOpts) {
		so.Chunks = 50
		so.ChunkInterval = 20 * time.Millisecond
	})
	e.key("anthropic", "key-a")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/v1/messages", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	req.Header.Set("x-api-key", testClientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := e.up.WaitCancelled(wctx, 1); err != nil {
		t.Fatal("upstream never saw the cancel:", err)
	}
	waitFinished(t, e)
	if st := e.state("key-a"); len(st.Cooldowns) != 0 {
		t.Fatal("a client leaving cooled the credential")
	}
	if fin := e.rec.of(api.EventRequestFinished); len(fin) != 1 || fin[0].Class != "aborted" {
		t.Fatalf("request_finished %+v", fin)
	}
}

// Once bytes reached the client nothing is retried; an upstream failure
// mid-stream becomes a provider-shaped SSE error event.
func TestMidStreamFailureBecomesErrorEvent(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.Step{CutAfter: 2})
	resp, body := e.post("/v1/messages", `{"model":"m","stream":true,"messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d", resp.StatusCode)
	}
	if !strings.Contains(body, "event: error") || !strings.Contains(body, "midway") || strings.Count(body, "event: content_block_delta") != 2 {
		t.Fatalf("body:\n%s", body)
	}
	if len(e.up.Requests()) != 1 {
		t.Fatal("a started stream was retried")
	}
}

// Plain (non-SSE) chunked answers are flushed as they come too.
func TestChunkedPassThrough(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, `{"part":%d}`, i)
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	e := newEnv(t, true, func(o *Options, _ *simOpts) {
		o.Providers = map[string]*Provider{"openai": {Name: "openai", Wire: "openai", BaseURL: up.URL, Profile: lookup("openai")}}
	})
	e.key("openai", "key-o")
	resp, body := e.post("/v1/chat/completions", `{"model":"gpt-5"}`)
	if resp.StatusCode != 200 || body != `{"part":0}{"part":1}{"part":2}` {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// isEventStream's shortcuts agree with a full media-type parse.
func TestIsEventStream(t *testing.T) {
	for _, ct := range []string{
		"text/event-stream", "text/event-stream; charset=utf-8", "text/event-stream;charset=utf-8",
		"Text/Event-Stream", " text/event-stream", "text/event-streamx", "text/event-stream/x",
		"application/json", "application/json; charset=utf-8", "application/jsonl", "", "text/plain", "garbage;;",
	} {
		mt, _, _ := mime.ParseMediaType(ct)
		if got, want := isEventStream(http.Header{"Content-Type": {ct}}), mt == "text/event-stream"; got != want {
			t.Errorf("%q: %v, want %v", ct, got, want)
		}
	}
}
