package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/sse"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/pool"
)

// Fallback across providers: with every credential of the client's
// provider out, the ladder's first target with a ready credential serves
// the request through the ordinary attempt loop, translated when the
// wires differ. The ladders come from real config text, so these tests
// also hold the config and the proxy to one meaning.

// withLadder wires the fallback section of a config.toml into the env;
// extra providers (zai, …) answer on the sim like the built-in ones.
func withLadder(t *testing.T, toml string, extra ...*Provider) envOpt {
	t.Helper()
	cfg, err := config.Parse("config.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options, _ *simOpts) {
		o.Fallback = func(provider, model string) (out []FallbackTarget) {
			for _, t := range cfg.Fallback.Targets(provider, model) {
				out = append(out, FallbackTarget(t))
			}
			return out
		}
		if len(extra) > 0 {
			o.Providers = map[string]*Provider{
				"anthropic": {Name: "anthropic", Wire: "anthropic", Profile: lookup("anthropic")},
				"openai":    {Name: "openai", Wire: "openai", Profile: lookup("openai")},
			}
			for _, p := range extra {
				o.Providers[p.Name] = p
			}
		}
	}
}

// coolAll puts every credential of provider in a cooldown of d, as if
// each had answered 429 with that reset.
func (e *env) coolAll(provider string, d time.Duration) {
	for _, c := range e.pool.Status(provider) {
		e.pool.CoolDown(c.ID, "", pool.ScopeCredential, d, "429 rate_limit_error")
	}
}

type sseEvent struct {
	name string
	data map[string]any
}

func readSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	r := sse.NewReader(strings.NewReader(body), 0, false)
	for {
		ev, err := r.Next()
		name, data := ev.Name, ev.Data
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("event %s: %s is not JSON", name, data)
		}
		out = append(out, sseEvent{name, m})
	}
}

func str(m map[string]any, path ...string) string {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

const weatherTool = `{"name":"weather","description":"Weather.","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}`

// claudeCodeTurn is a Claude Code request: system blocks with
// cache_control, tools, metadata, a streamed answer.
func claudeCodeTurn(model string, stream bool, messages string) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"` + model + `","max_tokens":32000,"stream":` + s + `,
	"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
	"metadata":{"user_id":"user_abc_account__session_1234"},
	"tools":[` + weatherTool + `],
	"messages":` + messages + `}`
}

const useTheTool = `[{"role":"user","content":[{"type":"text","text":"Please use the tool for Oslo."}]}]`

var anthropicID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// All Claude credentials cooling for an hour, an OpenAI key ready: a
// Claude Code turn is served by OpenAI through the Responses API and
// streamed back as the Anthropic events Claude Code reads, the tool call
// intact; its tool result goes the same way on the next turn.
func TestFallbackServesClaudeCodeOnOpenAI(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("anthropic", "key-a", "key-b", "key-c")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)

	resp, body := e.post("/v1/messages?beta=true", claudeCodeTurn("claude-opus-4-1", true, useTheTool),
		"anthropic-beta", "claude-code-20250219")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if got := resp.Header.Get("x-subpool-fallback"); got != "openai/gpt-5.1" {
		t.Errorf("x-subpool-fallback = %q, want openai/gpt-5.1 (opus is the strong tier)", got)
	}
	if resp.Header.Get("x-subpool-credential") != "key-o" || resp.Header.Get("x-subpool-attempts") != "1" {
		t.Errorf("credential %q attempts %q", resp.Header.Get("x-subpool-credential"), resp.Header.Get("x-subpool-attempts"))
	}

	// The Anthropic event sequence, with one tool_use block whose
	// arguments arrive as input_json_delta.
	id, args := claudeToolUse(t, body)
	checkResponsesRequest(t, e)

	// Decided at once: no sole-provider wait for Claude.
	if !e.fake.Now().Equal(epoch) || len(e.rec.of(api.EventWaitStarted)) != 0 {
		t.Error("the request waited")
	}
	fb := e.rec.of(api.EventFallback)
	if len(fb) != 1 || fb[0].From != "anthropic" || fb[0].To != "openai" || fb[0].Provider != "openai" ||
		fb[0].CredentialID != "key-o" || fb[0].Model != "claude-opus-4-1" || !strings.Contains(fb[0].Reason, "all 3 anthropic credentials") {
		t.Fatalf("fallback events %+v", fb)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 1 || fin[0].CredentialID != "key-o" || fin[0].Status != 200 || fin[0].Class != "ok" {
		t.Fatalf("request_finished %+v", fin)
	}

	// Claude Code answers the call by its id; the result reaches OpenAI
	// as the output of that same call.
	next := `[{"role":"user","content":"Please use the tool for Oslo."},
	{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"weather","input":` + args + `}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"snow"}]}]`
	resp, body = e.post("/v1/messages", claudeCodeTurn("claude-opus-4-1", true, next))
	if resp.StatusCode != 200 || !strings.Contains(body, `"text_delta"`) {
		t.Fatalf("second turn %d: %s", resp.StatusCode, body)
	}
	up := decode(t, e.up.Requests()[1].Body)
	var out map[string]any
	for _, it := range up["input"].([]any) {
		if m := it.(map[string]any); m["type"] == "function_call_output" {
			out = m
		}
	}
	if out == nil || out["call_id"] != id || out["output"] != "snow" {
		t.Fatalf("tool result lost on the way: %v", up["input"])
	}
}

// codexAuth gives ChatGPT logins what the real authenticator gives them:
// the Codex backend as base URL, without /v1.
type codexAuth struct {
	auth.Authenticator
	base string
}

func (a codexAuth) Auth(ctx context.Context, c pool.Credential, refresh bool) (auth.Auth, error) {
	au, err := a.Authenticator.Auth(ctx, c, refresh)
	if err == nil && c.Kind == api.KindOAuth {
		au.BaseURL, au.StripV1 = a.base, true
	}
	return au, err
}

// A ChatGPT login is served through the Codex backend, chosen by what its
// Auth says: the request takes that backend's strict shape, and a client
// that asked for JSON gets the stream collected into an Anthropic message.
func TestFallbackToChatGPTLoginUsesCodexBackend(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.px.o.Auth = codexAuth{e.auth, e.up.URL() + "/backend-api/codex"}
	e.key("anthropic", "key-a")
	e.auth.secrets["chatgpt"] = "chatgpt"
	e.pool.Add(pool.Credential{ID: "chatgpt", Provider: "openai", Label: "chatgpt", Kind: api.KindOAuth})
	e.coolAll("anthropic", time.Hour)

	resp, body := e.post("/v1/messages", claudeCodeTurn("claude-sonnet-4-5", false, useTheTool))
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-fallback") != "openai/gpt-5.1-codex" {
		t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-fallback"), body)
	}
	msg := decode(t, []byte(body))
	content, _ := msg["content"].([]any)
	if msg["type"] != "message" || msg["model"] != "claude-sonnet-4-5" || msg["stop_reason"] != "tool_use" || len(content) != 1 {
		t.Fatalf("not an Anthropic tool_use message: %s", body)
	}
	block := content[0].(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "weather" || !anthropicID.MatchString(str(block, "id")) {
		t.Fatalf("tool_use block %v", block)
	}
	r := e.up.Requests()[0]
	up := decode(t, r.Body)
	if r.Path != "/backend-api/codex/responses" || r.Model != "gpt-5.1-codex" || up["stream"] != true ||
		up["store"] != false || up["instructions"] == "" || up["max_output_tokens"] != nil {
		t.Fatalf("Codex backend saw %s: %s", r.Path, r.Body)
	}
}

// The only provider to fall back to has no credential: no switch, and
// the refusal says what to do about both providers.
func TestFallbackTargetNotLoggedIn(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("anthropic", "key-a")
	e.coolAll("anthropic", time.Hour)
	resp, body := e.post("/v1/messages", claudeCodeTurn("claude-sonnet-4-5", true, useTheTool))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3600" {
		t.Fatalf("%d retry-after %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	msg := str(decode(t, []byte(body)), "error", "message")
	for _, want := range []string{"the only anthropic credential is cooling down", "openai: not logged in — run `subpool login openai`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if len(e.up.Requests()) != 0 || len(e.rec.of(api.EventFallback)) != 0 || resp.Header.Get("x-subpool-fallback") != "" {
		t.Fatal("switched to a provider with no credential")
	}
}

// A target whose credentials are all out in other ways is skipped with
// the pool's own words for each.
func TestFallbackTargetOutSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func(e *env)
		want string
	}{
		{"cooling", func(e *env) { e.coolAll("openai", 5*time.Minute) }, "openai: the only openai credential is cooling down for gpt-5.1-codex; ready in 5m"},
		{"relogin", func(e *env) { e.pool.Park("key-o", "", api.ParkRelogin, "401 invalid_api_key") }, "the key was refused: add a new one (subpool add-key openai --label NAME)"},
		{"paused", func(e *env) { e.pool.Pause("key-o") }, "paused (subpool resume key-o)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false, withLadder(t, ""))
			e.key("anthropic", "key-a")
			e.key("openai", "key-o")
			e.coolAll("anthropic", time.Hour)
			tc.out(e)
			resp, body := e.post("/v1/messages", msgBody)
			if resp.StatusCode != 429 || !strings.Contains(body, tc.want) || len(e.up.Requests()) != 0 {
				t.Fatalf("%d %s, want %q", resp.StatusCode, body, tc.want)
			}
		})
	}
}

// Same wire: an Anthropic-compatible provider gets the request exactly as
// the client sent it — bytes, headers, query — but for the model.
func TestFallbackSameWireRewritesOnlyTheModel(t *testing.T) {
	zai := &Provider{Name: "zai", Wire: "anthropic", Profile: custom("zai", "anthropic", "credential")}
	e := newEnv(t, false, withLadder(t, `
[providers.zai]
wire = "anthropic"
base_url = "https://api.z.ai/api/anthropic"
[[fallback.anthropic]]
match = "claude-opus-*"
provider = "zai"
model = "glm-4.6"
[[fallback.anthropic]]
provider = "openai"
`, zai))
	e.key("anthropic", "key-a")
	e.key("zai", "key-z")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)

	// Odd spacing and key order, and a nested "model" that must stay.
	orig := `{ "max_tokens": 64,"messages":[{"role":"user","content":"hi"}],  "model" : "claude-opus-4-1",
	"metadata":{"model":"claude-opus-4-1"},"stream":false}`
	resp, body := e.post("/v1/messages?beta=true", orig, "anthropic-beta", "claude-code-20250219")
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-fallback") != "zai/glm-4.6" {
		t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-fallback"), body)
	}
	recs := e.up.Requests()
	if len(recs) != 1 {
		t.Fatalf("%d upstream calls", len(recs))
	}
	r := recs[0]
	want := strings.Replace(orig, `"model" : "claude-opus-4-1"`, `"model" : "glm-4.6"`, 1)
	if r.Credential != "key-z" || r.Path != "/v1/messages" || string(r.Body) != want {
		t.Fatalf("zai saw %s %s:\n%s\nwant\n%s", r.Credential, r.Path, r.Body, want)
	}
	if r.Query != "beta=true" || r.Header.Get("anthropic-beta") != "claude-code-20250219" {
		t.Errorf("query %q, anthropic-beta %q: the request must go as is", r.Query, r.Header.Get("anthropic-beta"))
	}

	// A model the zai rung does not match goes on to the next rung.
	resp, _ = e.post("/v1/messages", msgBody)
	if resp.Header.Get("x-subpool-fallback") != "openai/gpt-5.1-codex" {
		t.Fatalf("sonnet went to %q", resp.Header.Get("x-subpool-fallback"))
	}
}

// Codex CLI with the whole openai pool cooling is served by Claude and
// gets the Responses event stream it reads, function call included.
func TestFallbackServesCodexOnClaude(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("openai", "key-o1", "key-o2")
	e.key("anthropic", "key-a")
	e.coolAll("openai", 2*time.Hour)

	codex := `{"model":"gpt-5.1-codex","instructions":"You are Codex.","stream":true,"store":false,
	"reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"conv-1",
	"tools":[{"type":"function","name":"weather","strict":false,"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],
	"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"use the tool for Oslo"}]}]}`
	resp, body := e.post("/v1/responses", codex, "x-api-key", "", "Authorization", "Bearer "+testClientKey)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-fallback") != "anthropic/claude-sonnet-4-5" {
		t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-fallback"), body)
	}
	evs := readSSE(t, body)
	if len(evs) < 3 || evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
		t.Fatalf("not a Responses stream: %s", body)
	}
	if m := str(evs[0].data, "response", "model"); m != "gpt-5.1-codex" {
		t.Errorf("response.created names %q; the client must see its own model", m)
	}
	var call map[string]any
	for _, ev := range evs {
		if ev.name == "response.output_item.done" && str(ev.data, "item", "type") == "function_call" {
			call = ev.data["item"].(map[string]any)
		}
	}
	if call == nil || call["name"] != "weather" || str(call, "call_id") == "" || !strings.Contains(str(call, "arguments"), `"city"`) {
		t.Fatalf("function call lost: %s", body)
	}

	r := e.up.Requests()[0]
	up := decode(t, r.Body)
	tools, _ := up["tools"].([]any)
	if r.Path != "/v1/messages" || r.Model != "claude-sonnet-4-5" || r.Credential != "key-a" || up["messages"] == nil ||
		len(tools) != 1 || tools[0].(map[string]any)["input_schema"] == nil || r.Header.Get("anthropic-version") == "" {
		t.Fatalf("Claude saw %s %s: %s %v", r.Path, r.Model, r.Body, r.Header)
	}
	if fb := e.rec.of(api.EventFallback); len(fb) != 1 || fb[0].From != "openai" || fb[0].To != "anthropic" ||
		!strings.Contains(fb[0].Reason, "all 2 openai credentials are cooling down") {
		t.Fatalf("fallback events %+v", fb)
	}
}

// What the other wire cannot carry is refused, never dropped: the request
// does not detour, and the client's refusal says why.
func TestFallbackUntranslatableStaysHome(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)
	// A final assistant message is a prefill: Claude continues it, an
	// OpenAI model cannot.
	prefill := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure: "}]}`
	resp, body := e.post("/v1/messages", prefill)
	if resp.StatusCode != 429 || !strings.Contains(body, "openai: cannot carry this request: messages[1]") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if len(e.up.Requests()) != 0 || len(e.rec.of(api.EventFallback)) != 0 {
		t.Fatal("detoured anyway")
	}
}

// The target's only key answers 429 during the detour: the target is
// exhausted too, nothing of its refusal reaches the client, and the
// client's own refusal names both providers.
func TestFallbackTargetExhaustedWhileTrying(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)
	e.up.Script("key-o", sim.RateLimited("openai", 3*time.Hour))
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3600" || resp.Header.Get("x-subpool-fallback") != "" {
		t.Fatalf("%d retry-after %q fallback %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("x-subpool-fallback"), body)
	}
	msg := str(decode(t, []byte(body)), "error", "message")
	if !strings.Contains(msg, "the only anthropic credential is cooling down") ||
		!strings.Contains(msg, "openai: the only openai credential is cooling down for gpt-5.1-codex; ready in 3h") {
		t.Fatalf("message %q", msg)
	}
	if resp.Header.Get("x-subpool-attempts") != "1" || e.up.Calls("key-o") != 1 || len(e.rec.of(api.EventFallback)) != 0 {
		t.Fatalf("attempts %q, calls %d", resp.Header.Get("x-subpool-attempts"), e.up.Calls("key-o"))
	}
}

// One level only: when the target runs out during the detour, its own
// ladder is not followed.
func TestFallbackIsOneLevel(t *testing.T) {
	zai := &Provider{Name: "zai", Wire: "anthropic", Profile: custom("zai", "anthropic", "credential")}
	e := newEnv(t, false, withLadder(t, `
[providers.zai]
wire = "anthropic"
base_url = "https://api.z.ai/api/anthropic"
[[fallback.anthropic]]
provider = "zai"
model = "glm-4.6"
[[fallback.zai]]
provider = "openai"
model = "gpt-5.1"
`, zai))
	e.key("anthropic", "key-a")
	e.key("zai", "key-z")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)
	e.up.Script("key-z", sim.RateLimited("anthropic", time.Hour))
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 429 || e.up.Calls("key-o") != 0 || !strings.Contains(body, "zai: the only zai credential is cooling down") {
		t.Fatalf("%d, openai called %d times: %s", resp.StatusCode, e.up.Calls("key-o"), body)
	}
}

// An error the target answers (here a 400) is the answer: passed to the
// client in its own provider's shape, with the status kept.
func TestFallbackTargetErrorIsTranslated(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Hour)
	e.up.Script("key-o", sim.Step{Status: 400, Body: `{"error":{"message":"max_output_tokens is too large","type":"invalid_request_error","param":"max_output_tokens","code":null}}`})
	resp, body := e.post("/v1/messages", msgBody)
	m := decode(t, []byte(body))
	if resp.StatusCode != 400 || m["type"] != "error" || str(m, "error", "type") != "invalid_request_error" ||
		str(m, "error", "message") != "max_output_tokens is too large" || resp.Header.Get("x-subpool-fallback") != "openai/gpt-5.1-codex" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if fb := e.rec.of(api.EventFallback); len(fb) != 1 {
		t.Fatalf("fallback events %+v", fb)
	}
}

// An OpenAI-compatible provider is asked through Chat Completions, and a
// JSON answer comes back as an Anthropic message.
func TestFallbackToChatCompletionsProvider(t *testing.T) {
	deep := &Provider{Name: "deep", Wire: "openai", Profile: custom("deep", "openai", "credential")}
	e := newEnv(t, false, withLadder(t, `
[providers.deep]
wire = "openai"
base_url = "https://api.deep.example"
[fallback.models.deep]
medium = "deep-chat"
[[fallback.anthropic]]
provider = "deep"
`, deep))
	e.key("anthropic", "key-a")
	e.key("deep", "key-d")
	e.coolAll("anthropic", time.Hour)
	resp, body := e.post("/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	m := decode(t, []byte(body))
	content, _ := m["content"].([]any)
	if resp.StatusCode != 200 || m["type"] != "message" || m["model"] != "claude-haiku-4-5" || len(content) != 1 ||
		!strings.HasPrefix(str(content[0].(map[string]any), "text"), "hello ") || resp.Header.Get("x-subpool-fallback") != "deep/deep-chat" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if r := e.up.Requests()[0]; r.Path != "/v1/chat/completions" || r.Model != "deep-chat" {
		t.Fatalf("deep saw %s %s", r.Path, r.Model)
	}
}

// With no ladder the old rules hold: a short cooldown is waited out.
func TestFallbackOffKeepsSoleProviderWait(t *testing.T) {
	e := newEnv(t, false, withLadder(t, "[fallback]\nenabled = false"))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", time.Second)
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 200 || e.up.Calls("key-o") != 0 || len(e.rec.of(api.EventWaitStarted)) != 1 {
		t.Fatalf("%d, openai calls %d", r.resp.StatusCode, e.up.Calls("key-o"))
	}
}

// A cooldown short enough to wait out is waited out even when another
// provider could serve at once: a conversation keeps its model and its
// prompt cache over seconds; only a long outage switches providers.
func TestShortCooldownWaitsRatherThanSwitching(t *testing.T) {
	e := newEnv(t, false, withLadder(t, ""))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.coolAll("anthropic", 20*time.Second)
	r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
	if r.resp.StatusCode != 200 || r.resp.Header.Get("x-subpool-fallback") != "" || e.up.Calls("key-o") != 0 {
		t.Fatalf("%d fallback=%q openai calls %d", r.resp.StatusCode, r.resp.Header.Get("x-subpool-fallback"), e.up.Calls("key-o"))
	}
	if ws := e.rec.of(api.EventWaitStarted); len(ws) != 1 || ws[0].WaitMS != 20000 {
		t.Fatalf("waits %+v", ws)
	}
	// Past sole_provider_max (2m here), the same pool switches.
	e.coolAll("anthropic", time.Hour)
	resp, _ := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("x-subpool-fallback"), "openai/") {
		t.Fatalf("long cooldown did not fall back: %d %v", resp.StatusCode, resp.Header)
	}
}

// claudeToolUse reads a fallback's Anthropic stream: message_start first
// naming the client's model, message_stop last, and one tool_use block
// for the weather tool whose arguments, arriving as input_json_delta,
// fill its schema. It returns the block's id and arguments.
func claudeToolUse(t *testing.T, body string) (id, args string) {
	t.Helper()
	evs := readSSE(t, body)
	var names []string
	var name, stop string
	for _, ev := range evs {
		names = append(names, ev.name)
		switch ev.name {
		case "message_start":
			if m := str(ev.data, "message", "model"); m != "claude-opus-4-1" {
				t.Errorf("message_start names model %q; the client must see its own", m)
			}
		case "content_block_start":
			if str(ev.data, "content_block", "type") == "tool_use" {
				id, name = str(ev.data, "content_block", "id"), str(ev.data, "content_block", "name")
			}
		case "content_block_delta":
			if str(ev.data, "delta", "type") == "input_json_delta" {
				args += str(ev.data, "delta", "partial_json")
			}
		case "message_delta":
			stop = str(ev.data, "delta", "stop_reason")
		}
	}
	if len(names) == 0 || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	if name != "weather" || !anthropicID.MatchString(id) || stop != "tool_use" {
		t.Fatalf("tool_use id=%q name=%q stop=%q in %v", id, name, stop, names)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(args), &input); err != nil || input["city"] == nil || input["days"] == nil {
		t.Fatalf("tool input %q does not fill the schema: %v", args, err)
	}
	return id, args
}

// checkResponsesRequest checks that the one upstream call was an OpenAI
// request: Responses shape, the mapped model, the tool as a function,
// and none of Claude Code's own headers or query.
func checkResponsesRequest(t *testing.T, e *env) {
	t.Helper()
	recs := e.up.Requests()
	if len(recs) != 1 {
		t.Fatalf("%d upstream calls", len(recs))
	}
	r := recs[0]
	if r.Credential != "key-o" || r.Path != "/v1/responses" || r.Model != "gpt-5.1" || !r.Stream || r.Query != "" {
		t.Fatalf("upstream saw %s %s?%s model %s stream %v", r.Credential, r.Path, r.Query, r.Model, r.Stream)
	}
	up := decode(t, r.Body)
	tools, _ := up["tools"].([]any)
	if up["messages"] != nil || up["input"] == nil || up["instructions"] != "You are Claude Code." || len(tools) != 1 ||
		str(tools[0].(map[string]any), "type") != "function" || str(tools[0].(map[string]any), "name") != "weather" {
		t.Fatalf("upstream body is not a translated Responses request: %s", r.Body)
	}
	if r.Header.Get("anthropic-beta") != "" || r.Header.Get("anthropic-version") != "" {
		t.Errorf("Anthropic headers reached OpenAI: %v", r.Header)
	}
}
