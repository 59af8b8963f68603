package proxy

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// The usage request_finished carries is the upstream's own count, on each
// wire, JSON and SSE, read as the answer passes: the sim's count is known
// (tokens of the body in, of the answer's text out).
func TestUsageIsTheUpstreams(t *testing.T) {
	answerOut := int64(sim.Tokens(len("hello ") * 5))
	for _, c := range []struct {
		name, provider, path, body string
	}{
		{"messages json", "anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi there"}]}`},
		{"messages sse", "anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi there"}]}`},
		{"responses json", "openai", "/v1/responses", `{"model":"gpt-5","input":"hi there"}`},
		{"responses sse", "openai", "/v1/responses", `{"model":"gpt-5","input":"hi there","stream":true}`},
		{"chat json", "openai", "/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi there"}]}`},
		{"chat sse", "openai", "/v1/chat/completions", `{"model":"gpt-5","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi there"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false)
			e.key(c.provider, "key-a")
			resp, body := e.post(c.path, c.body, "User-Agent", "claude-cli/2.1.332 (external, sdk-cli)")
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			fin := finished(t, e)
			in := int64(sim.Tokens(len(c.body)))
			if fin.InputTokens != in || fin.OutputTokens != answerOut || fin.CacheReadTokens != 0 || fin.CacheWriteTokens != 0 {
				t.Fatalf("tokens in %d out %d (cache %d/%d), want %d/%d", fin.InputTokens, fin.OutputTokens, fin.CacheReadTokens, fin.CacheWriteTokens, in, answerOut)
			}
			if fin.ClientApp != "claude-code" || fin.CredentialKind != api.KindAPIKey || fin.ServedModel == "" {
				t.Fatalf("attribution %+v", fin)
			}
		})
	}
}

// A stream cut after two deltas keeps what the upstream reported by then;
// a stream the client leaves is recorded aborted with the tokens seen.
func TestUsageOfStreamsThatEndEarly(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.Step{CutAfter: 2})
	e.post("/v1/messages", body)
	fin := finished(t, e)
	if fin.InputTokens != int64(sim.Tokens(len(body))) || fin.OutputTokens != 1 {
		t.Fatalf("cut stream: in %d out %d (message_start said %d/1)", fin.InputTokens, fin.OutputTokens, sim.Tokens(len(body)))
	}

	ctx, cancel := context.WithCancel(context.Background())
	e = newEnv(t, true, func(_ *Options, so *sim.Options) {
		so.Chunks, so.ChunkInterval = 40, 5*time.Millisecond
		so.BeforeEvent = func(_ context.Context, ev sim.Event) error {
			if ev.Index == 10 { // the client leaves after a few deltas
				cancel()
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		}
	})
	e.key("anthropic", "key-a")
	e.postCtx(ctx, "/v1/messages", body)
	fin = finished(t, e)
	if fin.Class != "aborted" || fin.CredentialID != "key-a" || fin.InputTokens != int64(sim.Tokens(len(body))) {
		t.Fatalf("left mid-stream: %+v", fin)
	}
}

// A turn served by fallback on the other wire is counted from what the
// target reported.
func TestUsageThroughFallback(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *sim.Options) {
		o.Fallback = func(provider, model string) []FallbackTarget {
			return []FallbackTarget{{Provider: "openai", Model: "gpt-5"}}
		}
	})
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)
	resp, body := e.post("/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-fallback") == "" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	fin := finished(t, e)
	if fin.FallbackTo != "openai/gpt-5" || fin.ServedModel != "gpt-5" || fin.InputTokens == 0 || fin.OutputTokens != int64(sim.Tokens(len("hello ")*5)) {
		t.Fatalf("%+v", fin)
	}
}

// 100 concurrent streams through a real history database: exactly 100
// rows, each with the upstream's tokens.
func TestHistoryRowPerRequest(t *testing.T) {
	db, err := history.Open(filepath.Join(t.TempDir(), "history.db"), history.Options{Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := newEnv(t, true, func(o *Options, _ *sim.Options) { o.Events = history.Tee(o.Events, db) })
	e.key("anthropic", "key-a", "key-b")
	body := `{"model":"claude-sonnet-4-5","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, b := e.post("/v1/messages", body); resp == nil || resp.StatusCode != 200 {
				t.Errorf("%v %s", resp, b)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.serving.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := db.UsageSince(ctx, time.Now().Add(-time.Hour), "provider")
	if err != nil {
		t.Fatal(err)
	}
	n, in := rep.Total.Requests, rep.Total.InputTokens
	if n != 100 || in != 100*int64(sim.Tokens(len(body))) {
		t.Fatalf("%d rows, %d input tokens", n, in)
	}
}

// finished is the one request_finished of a test, once the handler is done.
func finished(t *testing.T, e *env) api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.serving.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 1 {
		t.Fatalf("%d request_finished", len(fin))
	}
	return fin[0]
}
