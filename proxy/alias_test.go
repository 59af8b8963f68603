package proxy

import (
	"context"

	"github.com/subpool/subpool/internal/sim"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Model aliases: the alias resolves before selection, a list is tried in
// order like a fallback ladder, and the client sees the alias as the
// answer's model wherever one is named.

func withAliases(m map[string][]FallbackTarget) envOpt {
	return func(o *Options, _ *simOpts) {
		o.Aliases = func() map[string][]FallbackTarget { return m }
	}
}

var bestAlias = map[string][]FallbackTarget{
	"best": {{Provider: "anthropic", Model: "claude-opus-4-5"}, {Provider: "openai", Model: "gpt-5.1"}},
	"opus": {{Model: "claude-opus-4-5"}},
}

func TestOneTargetAliasChangesTheModel(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	resp, body := e.post("/v1/messages", strings.Replace(msgBody, "claude-sonnet-4-5", "opus", 1))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := e.up.Requests()[0].Model; got != "claude-opus-4-5" {
		t.Errorf("upstream asked for %q", got)
	}
	if m := decode(t, []byte(body)); str(m, "model") != "opus" {
		t.Errorf("client sees model %q: %s", str(m, "model"), body)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
		t.Errorf("Content-Length %s for a body of %d", cl, len(body))
	}
}

func TestAliasListSkipsACoolingFirstTarget(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", 30*time.Second)

	req := strings.Replace(msgBody, "claude-sonnet-4-5", "best", 1)
	resp, body := e.post("/v1/messages", req)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := e.credsSeen(); len(got) != 1 || got[0] != "key-o" {
		t.Fatalf("upstream calls %v, want the second target's only", got)
	}
	if got := e.up.Requests()[0].Model; got != "gpt-5.1" {
		t.Errorf("second target asked for %q", got)
	}
	if m := decode(t, []byte(body)); str(m, "model") != "best" || str(m, "type") != "message" {
		t.Errorf("client sees %s", body)
	}
	if got := resp.Header.Get("x-subpool-fallback"); got != "openai/gpt-5.1" {
		t.Errorf("x-subpool-fallback %q", got)
	}

	// Streamed: every event that names a model names the alias.
	stream := strings.Replace(req, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)
	resp, body = e.post("/v1/messages", stream)
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	named := 0
	for _, ev := range readSSE(t, body) {
		for _, m := range []string{str(ev.data, "model"), str(ev.data, "message", "model")} {
			if m != "" {
				named++
				if m != "best" {
					t.Errorf("event %s names model %q", ev.name, m)
				}
			}
		}
	}
	if named == 0 {
		t.Fatalf("no event named a model: %s", body)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 2 || fin[1].Model != "best" || fin[1].FallbackTo != "openai/gpt-5.1" {
		t.Errorf("request_finished %+v", fin)
	}
}

// An OpenAI client asking for the same alias: the first target is on the
// other wire and cooling, the second on the client's own provider, and
// every chunk of the stream names the alias.
func TestAliasListServesOnTheClientsOwnProvider(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", 30*time.Second)

	resp, body := e.post("/v1/chat/completions", `{"model":"best","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := e.up.Requests(); len(got) != 1 || got[0].Model != "gpt-5.1" || got[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream %+v", got)
	}
	chunks := 0
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		chunks++
		if m := decode(t, []byte(data)); str(m, "model") != "best" {
			t.Errorf("chunk names %q: %s", str(m, "model"), data)
		}
	}
	if chunks == 0 {
		t.Fatalf("no chunks: %s", body)
	}
}

// With nobody else able to serve, the list's first target still gets its
// own loop, which waits out its short cooldown.
func TestAliasListWaitsForTheFirstWhenNoneElseCanServe(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.coolAll("anthropic", 30*time.Second)
	ch := e.async(t.Context(), "/v1/messages", strings.Replace(msgBody, "claude-sonnet-4-5", "best", 1))
	r := e.pump(ch)
	if r.resp == nil || r.resp.StatusCode != 200 {
		t.Fatalf("%v %s", r.resp, r.body)
	}
	if got := e.up.Requests(); len(got) != 1 || got[0].Model != "claude-opus-4-5" {
		t.Fatalf("upstream %+v", got)
	}
	if m := decode(t, []byte(r.body)); str(m, "model") != "best" {
		t.Errorf("client sees %s", r.body)
	}
}

func TestAliasTargetsOutsideTheKeysLimitsAreDropped(t *testing.T) {
	keys := &keyTable{m: map[string]Client{keyCodex: {Name: "codex", Providers: []string{"openai"}}}}
	e := newEnv(t, false, withAliases(bestAlias), withClients(keys))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	resp, body := e.post("/v1/messages", strings.Replace(msgBody, "claude-sonnet-4-5", "best", 1), "x-api-key", keyCodex)
	// The route itself is anthropic's: refused before the alias is read.
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = e.post("/v1/chat/completions", `{"model":"best","messages":[{"role":"user","content":"hi"}]}`, "x-api-key", keyCodex)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := e.credsSeen(); len(got) != 1 || got[0] != "key-o" {
		t.Fatalf("upstream calls %v: the anthropic target is not this key's", got)
	}
}

// A list's first target refused with a rate limit yields at once to the
// next target that can serve, instead of waiting out its cooldown (issue
// 24: a 429 with retry-after: 20 on the only Anthropic key made the
// request wait 20 s while the OpenAI key was ready).
func TestAliasListMovesOnFromARateLimit(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.up.Script("key-a", sim.RateLimited("anthropic", 20*time.Second))
	start := e.fake.Now()
	r := e.pump(e.async(context.Background(), "/v1/messages", strings.Replace(msgBody, "claude-sonnet-4-5", "best", 1)))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-credential") != "key-o" {
		t.Fatalf("%d on %q: %s", r.resp.StatusCode, r.resp.Header.Get("x-subpool-credential"), r.body)
	}
	if got := strings.Join(e.credsSeen(), ","); got != "key-a,key-o" {
		t.Fatalf("upstream calls %s, want key-a then key-o", got)
	}
	if waited := e.fake.Now().Sub(start); waited != 0 || len(e.rec.of(api.EventWaitStarted)) != 0 {
		t.Fatalf("waited %v (%d waits) with the second target ready", waited, len(e.rec.of(api.EventWaitStarted)))
	}
}

// When no other target can serve, the first one is waited for as before.
func TestAliasListWaitsWhenNoneElseCan(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.RateLimited("anthropic", 20*time.Second))
	start := e.fake.Now()
	r := e.pump(e.async(context.Background(), "/v1/messages", strings.Replace(msgBody, "claude-sonnet-4-5", "best", 1)))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-credential") != "key-a" {
		t.Fatalf("%d %s", r.resp.StatusCode, r.body)
	}
	if waited := e.fake.Now().Sub(start); waited != 20*time.Second {
		t.Fatalf("waited %v, want the 20s cooldown", waited)
	}
}
