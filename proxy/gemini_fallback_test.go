package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Fallback between Gemini and the others, both ways, streaming with a tool
// call: the ladders are config.toml's defaults.

func withGoogleLadder(t *testing.T) envOpt {
	return withLadder(t, "", &Provider{Name: "google", Wire: "gemini", Profile: lookup("google")})
}

// All Claude credentials cooling, a Gemini key ready: Claude Code's turn
// is served by Gemini and streamed back as Anthropic events with the tool
// call, and the tool result reaches Gemini as the function's response.
func TestFallbackServesClaudeCodeOnGemini(t *testing.T) {
	e := newEnv(t, false, withGoogleLadder(t))
	e.key("anthropic", "key-a")
	e.geminiKey("g1")
	e.coolAll("anthropic", time.Hour)
	e.coolAll("openai", time.Hour) // none: the ladder's first rung has no credential

	resp, body := e.post("/v1/messages", claudeCodeTurn("claude-opus-4-1", true, useTheTool), "User-Agent", "claude-cli/2.1.197 (external, cli)")
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-fallback") != "google/gemini-2.5-pro" {
		t.Fatalf("%d fallback %q: %s", resp.StatusCode, resp.Header.Get("x-subpool-fallback"), body)
	}
	var id, name, args, stop string
	for _, ev := range readSSE(t, body) {
		switch ev.name {
		case "message_start":
			if m := str(ev.data, "message", "model"); m != "claude-opus-4-1" {
				t.Errorf("message_start names %q", m)
			}
		case "content_block_start":
			if str(ev.data, "content_block", "type") == "tool_use" {
				id, name = str(ev.data, "content_block", "id"), str(ev.data, "content_block", "name")
			}
		case "content_block_delta":
			args += str(ev.data, "delta", "partial_json")
		case "message_delta":
			stop = str(ev.data, "delta", "stop_reason")
		}
	}
	if name != "weather" || !anthropicID.MatchString(id) || stop != "tool_use" {
		t.Fatalf("tool_use id=%q name=%q stop=%q: %s", id, name, stop, body)
	}
	r := e.up.Requests()[0]
	if r.Path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" || r.Query != "alt=sse" || r.Header.Get("X-Goog-Api-Key") != "AIza-g1" {
		t.Fatalf("Gemini was asked %s?%s with %v", r.Path, r.Query, r.Header)
	}
	if !strings.Contains(string(r.Body), `"functionDeclarations"`) || !strings.Contains(string(r.Body), `"systemInstruction"`) {
		t.Fatalf("not a Gemini request: %s", r.Body)
	}

	next := `[{"role":"user","content":"Please use the tool for Oslo."},
	{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"weather","input":` + args + `}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"snow"}]}]`
	resp, body = e.post("/v1/messages", claudeCodeTurn("claude-opus-4-1", true, next), "User-Agent", "claude-cli/2.1.197 (external, cli)")
	if resp.StatusCode != 200 || !strings.Contains(body, `"text_delta"`) {
		t.Fatalf("second turn %d: %s", resp.StatusCode, body)
	}
	var up struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					Name     string
					Response map[string]any
				} `json:"functionResponse"`
			}
		}
	}
	if err := json.Unmarshal(e.up.Requests()[1].Body, &up); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range up.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == "weather" && strings.Contains(toJSON(p.FunctionResponse.Response), "snow") {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("the tool result did not reach Gemini as weather's response: %s", e.up.Requests()[1].Body)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

const geminiToolTurn = `{"contents":[{"role":"user","parts":[{"text":"Please use the tool for Oslo."}]}],
"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},
"tools":[{"functionDeclarations":[{"name":"weather","description":"Weather.","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}]}]}`

// The Google pool out, a Claude key ready: Gemini CLI's turn, in either of
// its forms, is served by Claude and streamed back as Gemini chunks with
// the function call (wrapped in Code Assist's envelope for its login
// mode).
func TestFallbackServesGeminiCLIOnClaude(t *testing.T) {
	for _, codeAssist := range []bool{false, true} {
		e := newEnv(t, false, withGoogleLadder(t))
		e.geminiKey("g1")
		e.key("anthropic", "key-a")
		e.coolAll("google", time.Hour)

		path, body := "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiToolTurn
		if codeAssist {
			path = "/v1internal:streamGenerateContent?alt=sse"
			body = `{"model":"gemini-2.5-pro","project":"p","user_prompt_id":"u1","request":` + geminiToolTurn + `}`
		}
		resp, got := e.post(path, body, geminiHeaders(codeAssist)...)
		if resp.StatusCode != 200 || resp.Header.Get("x-subpool-fallback") != "anthropic/claude-opus-4-5" {
			t.Fatalf("code assist %v: %d fallback %q: %s", codeAssist, resp.StatusCode, resp.Header.Get("x-subpool-fallback"), got)
		}
		if strings.Contains(got, `"response":`) != codeAssist || !strings.Contains(got, `"functionCall"`) || !strings.Contains(got, `"weather"`) || !strings.Contains(got, `"finishReason"`) {
			t.Fatalf("code assist %v: not Gemini chunks with the call: %s", codeAssist, got)
		}
		r := e.up.Requests()[0]
		if r.Path != "/v1/messages" || r.Model != "claude-opus-4-5" || !r.Stream || !strings.Contains(string(r.Body), `"input_schema"`) {
			t.Fatalf("Claude was asked %s model %s stream %v: %s", r.Path, r.Model, r.Stream, r.Body)
		}
		if fb := e.rec.of(api.EventFallback); len(fb) != 1 || fb[0].From != "google" || fb[0].To != "anthropic" {
			t.Fatalf("fallback events %+v", fb)
		}
	}
}
