package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/subpool/subpool/internal/realclients"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// chatGPTOnly is an env whose openai pool holds one ChatGPT login, which
// the real authenticator sends to the Codex backend.
func chatGPTOnly(t *testing.T, opts ...envOpt) *env {
	e := newEnv(t, false, opts...)
	e.px.o.Auth = codexAuth{e.auth, e.up.URL() + "/backend-api/codex"}
	e.auth.secrets["chatgpt"] = "chatgpt"
	e.pool.Add(pool.Credential{ID: "chatgpt", Provider: "openai", Label: "chatgpt", Kind: api.KindOAuth})
	return e
}

// The OpenAI SDK's chat.completions.create as an editor sends it: a
// system prompt, a tool, an output cap.
func sdkChat(stream bool, messages string) string {
	s := `{"model":"gpt-5-codex","messages":[{"role":"system","content":"You are an editor's agent."},` + messages + `],` +
		`"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}],` +
		`"max_completion_tokens":4096,"reasoning_effort":"low"`
	if stream {
		s += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return s + "}"
}

// A ChatGPT login serves Chat Completions: each call goes to the Codex
// backend in its shape, and the answer, streamed or not, with a tool
// call, comes back as a chat completion; the tool's result on the next
// turn reaches the backend as the output of that call.
func TestChatGPTLoginServesChatCompletions(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			e := chatGPTOnly(t)
			resp, body := e.post("/v1/chat/completions", sdkChat(stream, `{"role":"user","content":"Please use the tool on main.go."}`))
			if resp.StatusCode != 200 {
				t.Fatalf("%d: %s", resp.StatusCode, body)
			}
			id, args := chatToolCall(t, stream, body)
			var in map[string]any
			if err := json.Unmarshal([]byte(args), &in); err != nil || in["path"] == nil {
				t.Fatalf("tool call %s(%s): %v", id, args, err)
			}
			r := e.up.Requests()[0]
			up := decode(t, r.Body)
			if r.Path != "/backend-api/codex/responses" || up["stream"] != true || up["store"] != false ||
				up["instructions"] != "You are an editor's agent." || up["max_output_tokens"] != nil || up["messages"] != nil {
				t.Fatalf("the Codex backend saw %s: %s", r.Path, r.Body)
			}

			next := `{"role":"user","content":"Please use the tool on main.go."},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"read_file","arguments":` + strconvQuote(args) + `}}]},` +
				`{"role":"tool","tool_call_id":"` + id + `","content":"package main"}`
			if resp, body = e.post("/v1/chat/completions", sdkChat(stream, next)); resp.StatusCode != 200 {
				t.Fatalf("second turn %d: %s", resp.StatusCode, body)
			}
			var out map[string]any
			for _, it := range decode(t, e.up.Requests()[1].Body)["input"].([]any) {
				if m := it.(map[string]any); m["type"] == "function_call_output" {
					out = m
				}
			}
			if out == nil || out["call_id"] != id || out["output"] != "package main" {
				t.Fatalf("the tool's result did not reach the backend: %s", e.up.Requests()[1].Body)
			}
		})
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// chatToolCall reads the one tool call of a chat completion or of a
// chunk stream (which must end with the include_usage chunk and [DONE]).
func chatToolCall(t *testing.T, stream bool, body string) (id, args string) {
	t.Helper()
	if !stream {
		m := decode(t, []byte(body))
		ch := m["choices"].([]any)[0].(map[string]any)
		calls, _ := ch["message"].(map[string]any)["tool_calls"].([]any)
		if m["object"] != "chat.completion" || ch["finish_reason"] != "tool_calls" || len(calls) != 1 || m["usage"] == nil {
			t.Fatalf("not a chat completion with one tool call: %s", body)
		}
		c := calls[0].(map[string]any)
		f := c["function"].(map[string]any)
		return str(c, "id"), str(f, "arguments")
	}
	lines := strings.Split(strings.TrimSpace(body), "\n\n")
	if len(lines) < 4 || lines[len(lines)-1] != "data: [DONE]" ||
		!strings.Contains(lines[len(lines)-2], `"choices":[]`) || !strings.Contains(lines[len(lines)-2], `"usage"`) ||
		!strings.Contains(lines[len(lines)-3], `"finish_reason":"tool_calls"`) {
		t.Fatalf("not a chunk stream ending in finish, usage, [DONE]:\n%s", body)
	}
	var b strings.Builder
	for _, l := range lines[:len(lines)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", l, err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					id = tc.ID
				}
				b.WriteString(tc.Function.Arguments)
			}
		}
	}
	return id, b.String()
}

// A Responses call from another client than Codex CLI (the SDK's: JSON,
// an output cap, no instructions) is put in the backend's shape and its
// stream collected; Codex CLI's own request goes byte for byte.
func TestChatGPTLoginShapesResponsesCalls(t *testing.T) {
	e := chatGPTOnly(t)
	resp, body := e.post("/v1/responses", `{"model":"gpt-5-codex","input":"say hi","max_output_tokens":50,"temperature":0.2}`)
	m := decode(t, []byte(body))
	if resp.StatusCode != 200 || m["object"] != "response" || m["status"] != "completed" || !strings.Contains(body, "hello") {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	up := decode(t, e.up.Requests()[0].Body)
	if up["stream"] != true || up["instructions"] == nil || up["max_output_tokens"] != nil || up["temperature"] != nil || up["store"] != false {
		t.Fatalf("the backend saw %s", e.up.Requests()[0].Body)
	}

	codex := `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],"tools":[],"tool_choice":"auto","parallel_tool_calls":false,"store":false,"stream":true,"include":[],"prompt_cache_key":"c1"}`
	if resp, body = e.post("/v1/responses", codex); resp.StatusCode != 200 || !strings.Contains(body, "response.completed") {
		t.Fatalf("Codex CLI %d: %s", resp.StatusCode, body)
	}
	if got := e.up.Requests()[1].Body; !bytes.Equal(got, []byte(codex)) {
		t.Errorf("Codex CLI's request changed on the way:\n%s", got)
	}
}

// In a pool that mixes them, an API key takes a Chat call as it came,
// to the API's own route, while a login would reshape it.
func TestMixedPoolKeyTakesChatAsItCame(t *testing.T) {
	e := chatGPTOnly(t)
	e.key("openai", "key-o")
	if err := e.pool.Pause("chatgpt"); err != nil {
		t.Fatal(err)
	}
	chat := `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}], "temperature": 0.5}`
	if resp, body := e.post("/v1/chat/completions", chat); resp.StatusCode != 200 || !strings.Contains(body, `"chat.completion"`) {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	if r := e.up.Requests()[0]; r.Path != "/v1/chat/completions" || !bytes.Equal(r.Body, []byte(chat)) {
		t.Errorf("the key's call went to %s as %s", r.Path, r.Body)
	}
}

// A Chat request the Codex backend cannot carry (stop sequences: the
// Responses API has none) is refused in OpenAI's shape, naming the field,
// with no upstream call.
func TestChatGPTLoginRefusesWhatItCannotCarry(t *testing.T) {
	e := chatGPTOnly(t)
	resp, body := e.post("/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"stop":["END"]}`)
	msg := str(decode(t, []byte(body)), "error", "message")
	if resp.StatusCode != 400 || !strings.Contains(msg, "stop") || !strings.Contains(msg, "no stop sequences") || len(e.up.Requests()) != 0 {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
}

// withChatOnly adds a custom provider "deepseek" whose upstream serves
// only Chat Completions (wire = "openai-chat").
func withChatOnly(o *Options, so *sim.Options) {
	so.ChatOnly = true
	o.Providers = map[string]*Provider{
		"openai":   {Name: "openai", Wire: "openai", Profile: classify.Lookup("openai")},
		"deepseek": {Name: "deepseek", Wire: "openai", ChatOnly: true, Profile: classify.Custom("deepseek", "openai", "credential")},
	}
}

// Codex CLI (and every Responses client) on a chat-only provider: the
// request goes as Chat Completions, the answer comes back as Responses
// events, or a response object for a client that asked for JSON.
func TestChatOnlyProviderServesResponses(t *testing.T) {
	e := newEnv(t, false, withChatOnly)
	e.key("deepseek", "key-d")
	codex := `{"model":"deepseek-chat","instructions":"You are Codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Please use the tool."}]}],` +
		`"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]},"strict":false}],` +
		`"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"c1"}`
	resp, body := e.post("/deepseek/v1/responses", codex)
	if resp.StatusCode != 200 || !strings.Contains(body, "event: response.function_call_arguments.delta") ||
		!strings.Contains(body, `"name":"shell"`) || !strings.HasSuffix(strings.TrimSpace(body), "}") || !strings.Contains(body, "event: response.completed") {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	r := e.up.Requests()[0]
	up := decode(t, r.Body)
	if r.Path != "/v1/chat/completions" || up["messages"] == nil || up["input"] != nil || up["stream"] != true {
		t.Fatalf("the upstream saw %s: %s", r.Path, r.Body)
	}

	resp, body = e.post("/deepseek/v1/responses", `{"model":"deepseek-chat","input":"say hi"}`)
	if m := decode(t, []byte(body)); resp.StatusCode != 200 || m["object"] != "response" || !strings.Contains(body, "hello") {
		t.Fatalf("JSON %d: %s", resp.StatusCode, body)
	}
	// Its Chat clients go as they came.
	if resp, body := e.post("/deepseek/v1/chat/completions", chatSDKPlain); resp.StatusCode != 200 || e.up.Requests()[2].Path != "/v1/chat/completions" {
		t.Fatalf("chat %d: %s", resp.StatusCode, body)
	}
}

const chatSDKPlain = `{"model":"deepseek-chat","messages":[{"role":"user","content":"hi"}]}`

// /v1/models on a ChatGPT login lists what the Codex backend says the
// login can serve; beside an API key, both lists.
func TestModelsOfAChatGPTLogin(t *testing.T) {
	e := chatGPTOnly(t)
	ids, _ := e.models()
	for _, want := range []string{"gpt-5-codex", "gpt-5.1-codex-max"} {
		if !slices.Contains(ids, want) {
			t.Errorf("%v lacks %s", ids, want)
		}
	}
	recs := e.up.Requests()
	if len(recs) != 1 || recs[0].Path != "/backend-api/codex/models" || recs[0].Query != "client_version="+codexWireVersion {
		t.Errorf("asked %+v", recs)
	}

	e = chatGPTOnly(t)
	e.key("openai", "key-o")
	ids, _ = e.models()
	for _, want := range []string{"gpt-5.1-codex-max", "gpt-4.1"} {
		if !slices.Contains(ids, want) {
			t.Errorf("a mixed pool's list %v lacks %s", ids, want)
		}
	}
}

// The Codex release whose wire subpool follows is the one the real-client
// suite runs.
func TestCodexWireVersionIsThePinnedCodex(t *testing.T) {
	for _, p := range realclients.Pins {
		if p.Name == "@openai/codex" && p.Version != codexWireVersion {
			t.Errorf("codexWireVersion %s, the suite pins Codex %s: check what moved in its Responses requests", codexWireVersion, p.Version)
		}
	}
}

// An editor sends the same request shape every time, so its translation
// notes are the same each time: the log says each distinct line once.
func TestTranslationNotesAreLoggedOnce(t *testing.T) {
	e := chatGPTOnly(t)
	var mu sync.Mutex
	var lines []string
	e.px.o.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	bare := `{"model":"gpt-5-codex","input":"say hi","max_output_tokens":50}`
	for range 3 {
		if resp, body := e.post("/v1/responses", bare); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	other := `{"model":"gpt-5-codex","input":"say hi","max_output_tokens":50,"temperature":0.2}`
	if resp, body := e.post("/v1/responses", other); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	var notes []string
	for _, l := range lines {
		if strings.Contains(l, "neutral one is sent") {
			notes = append(notes, l)
		}
	}
	if len(notes) != 2 || notes[0] == notes[1] || !strings.Contains(notes[1], "temperature") {
		t.Fatalf("want one line for each request shape, got %q (all lines %q)", notes, lines)
	}
}
