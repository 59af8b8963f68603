package proxy

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// A key per tool: each client key names its tool, may be limited to some
// providers or models, and is looked up on every request, so revoking
// one refuses its next request.

// keyTable is the test's client keys; revoke takes effect at once, as the
// app's table does.
type keyTable struct {
	mu sync.Mutex
	m  map[string]Client
}

func (k *keyTable) lookup(key string) (Client, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.m[key]
	return c, ok
}

func (k *keyTable) revoke(key string) {
	k.mu.Lock()
	delete(k.m, key)
	k.mu.Unlock()
}

func withClients(k *keyTable) envOpt {
	return func(o *Options, _ *simOpts) { o.Clients = k.lookup }
}

const (
	keyClaude = "sp-claude-code-key"
	keyCodex  = "sp-codex-key"
)

func twoClients() *keyTable {
	return &keyTable{m: map[string]Client{
		keyClaude: {Name: "claude-code", Providers: []string{"anthropic"}},
		keyCodex:  {Name: "codex"},
	}}
}

func TestLimitedKeyIsRefusedOtherProvidersWithoutUpstreamCall(t *testing.T) {
	keys := twoClients()
	e := newEnv(t, false, withClients(keys))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")

	resp, body := e.post("/v1/chat/completions", chatBody, "x-api-key", keyClaude)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	// OpenAI's error shape, with the reason. Its type and code are
	// translate's for a 403, as for an upstream's bare 403: OpenAI has no
	// "forbidden" code (the one refusals.go's own table used to send),
	// so the code is null.
	m := decode(t, []byte(body))
	em, _ := m["error"].(map[string]any)
	if str(m, "error", "type") != "invalid_request_error" || em == nil || em["code"] != nil || !strings.Contains(str(m, "error", "message"), "may not use provider openai") {
		t.Errorf("body %s", body)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls for a refused request", n)
	}
	if fin := e.rec.of(api.EventRequestFinished); len(fin) != 1 || fin[0].Client != "claude-code" || fin[0].Status != http.StatusForbidden {
		t.Errorf("request_finished %+v", fin)
	}
	// …and on its own provider it is served.
	if resp, body := e.post("/v1/messages", msgBody, "x-api-key", keyClaude); resp.StatusCode != 200 {
		t.Fatalf("anthropic: %d %s", resp.StatusCode, body)
	}
}

func TestModelLimitedKeyIsRefusedInAnthropicShape(t *testing.T) {
	keys := &keyTable{m: map[string]Client{keyClaude: {Name: "cheap", Models: []string{"claude-haiku-*"}}}}
	e := newEnv(t, false, withClients(keys))
	e.key("anthropic", "key-a")
	resp, body := e.post("/v1/messages", msgBody, "x-api-key", keyClaude)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	m := decode(t, []byte(body))
	if str(m, "error", "type") != "permission_error" || !strings.Contains(str(m, "error", "message"), `may not use model "claude-sonnet-4-5"`) {
		t.Errorf("body %s", body)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	ok := strings.Replace(msgBody, "claude-sonnet-4-5", "claude-haiku-4-5", 1)
	if resp, body := e.post("/v1/messages", ok, "x-api-key", keyClaude); resp.StatusCode != 200 {
		t.Fatalf("allowed model: %d %s", resp.StatusCode, body)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 2 || fin[0].Status != http.StatusForbidden || fin[0].Client != "cheap" {
		t.Errorf("request_finished %+v", fin)
	}
}

func TestRevokedKeyIsRefusedAtItsNextRequest(t *testing.T) {
	keys := twoClients()
	e := newEnv(t, false, withClients(keys))
	e.key("openai", "key-o")
	if resp, body := e.post("/v1/chat/completions", chatBody, "x-api-key", keyCodex); resp.StatusCode != 200 {
		t.Fatalf("before: %d %s", resp.StatusCode, body)
	}
	keys.revoke(keyCodex)
	resp, body := e.post("/v1/chat/completions", chatBody, "x-api-key", keyCodex)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
		t.Fatalf("after: %d %s", resp.StatusCode, body)
	}
	if n := len(e.up.Requests()); n != 1 {
		t.Fatalf("%d upstream calls, want the first request's only", n)
	}
	// The other key is untouched; a request with no key is still refused.
	if resp, _ := e.post("/v1/messages", msgBody, "x-api-key", keyClaude); resp.StatusCode == http.StatusUnauthorized {
		t.Fatal("the other key was refused")
	}
	if resp, _ := e.post("/v1/messages", msgBody, "x-api-key", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
}

func TestEventsAndInFlightNameTheClient(t *testing.T) {
	keys := twoClients()
	e := newEnv(t, false, withClients(keys))
	e.key("openai", "key-o")
	e.up.Script("key-o", sim.Step{Delay: time.Minute})

	ctx, cancel := context.WithCancel(context.Background())
	ch := e.async(ctx, "/v1/chat/completions", chatBody, "x-api-key", keyCodex)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := e.up.WaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := e.px.InFlightByClient(); got["codex"] != 1 || len(got) != 1 {
		t.Errorf("in flight by client %v, want codex: 1", got)
	}
	cancel()
	<-ch
	e.serving.Wait(wctx)
	if got := e.px.InFlightByClient(); len(got) != 0 {
		t.Errorf("in flight after the request ended: %v", got)
	}

	if resp, body := e.post("/v1/chat/completions", chatBody, "x-api-key", keyCodex); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 2 {
		t.Fatalf("%d request_finished", len(fin))
	}
	for _, ev := range fin {
		if ev.Client != "codex" {
			t.Errorf("request_finished names client %q", ev.Client)
		}
	}
}
