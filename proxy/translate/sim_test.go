package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// The detour end to end against the simulated upstreams, which send the
// bodies and event sequences the real services send: a client request is
// translated, answered by the other provider's sim, and the answer
// translated back must be a valid answer of the client's wire, tool call
// included, on the next turn too.

var upstreamPath = map[Target]string{
	Anthropic:       "/v1/messages",
	OpenAIChat:      "/v1/chat/completions",
	OpenAIResponses: "/v1/responses",
	ChatGPTCodex:    "/backend-api/codex/responses",
}

// The Google credentials of the sim: Google refuses a key or a token it
// never issued, and a login's requests must name its project.
const (
	simGeminiKey   = "AIzaSy-translate-sim"
	simGoogleToken = "ya29.translate-sim"
)

func newSim(opts sim.Options) (s *sim.Server, project string) {
	s = sim.New(opts)
	s.AddGoogleKey(simGeminiKey)
	return s, s.AddGoogleLogin(simGoogleToken, sim.GoogleLogin{})
}

// callSim sends a translated request as the proxy would: to the wire's
// path (for Gemini, the model's, streaming or not; for Code Assist, the
// method, with the login's project set in the envelope) with the wire's
// credential.
func callSim(t *testing.T, s *sim.Server, wire Target, body []byte, model string, stream bool, project string) *httptest.ResponseRecorder {
	t.Helper()
	p := upstreamPath[wire]
	switch wire {
	case Gemini:
		p = geminiPath(model, stream)
	case GeminiCodeAssist:
		p = codeAssistPath(stream)
		var err error
		if body, err = SetCodeAssist(body, CodeAssist{Project: project}); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, p, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	switch wire {
	case Anthropic:
		req.Header.Set("x-api-key", "sk-ant-sim")
	case Gemini:
		req.Header.Set("x-goog-api-key", simGeminiKey)
	case GeminiCodeAssist:
		req.Header.Set("Authorization", "Bearer "+simGoogleToken)
	default:
		req.Header.Set("Authorization", "Bearer sk-sim")
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

const schemaJSON = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}`

// clientTurns are each client's first turn (asking for the tool) and a
// second turn built from the translated tool call.
var clientTurns = map[Target]struct {
	first func(stream bool) string
	next  func(callID, args string) string
}{
	Anthropic: {
		first: func(stream bool) string {
			return `{"model":"claude-sonnet-4-5","max_tokens":2048,"stream":` + jsonBool(stream) + `,
			"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
			"tools":[{"name":"weather","description":"Weather.","input_schema":` + schemaJSON + `}],
			"messages":[{"role":"user","content":[{"type":"text","text":"Please use the tool for Oslo."}]}]}`
		},
		next: func(callID, args string) string {
			return `{"model":"claude-sonnet-4-5","max_tokens":2048,"stream":true,
			"tools":[{"name":"weather","input_schema":` + schemaJSON + `}],
			"messages":[{"role":"user","content":"Please use the tool for Oslo."},
			{"role":"assistant","content":[{"type":"tool_use","id":"` + callID + `","name":"weather","input":` + args + `}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + callID + `","content":"snow"}]}]}`
		},
	},
	OpenAIResponses: {
		first: func(stream bool) string {
			return `{"model":"gpt-5-codex","instructions":"You are Codex.","stream":` + jsonBool(stream) + `,"store":false,
			"reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"],
			"tools":[{"type":"function","name":"weather","strict":false,"parameters":` + schemaJSON + `}],
			"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"USE THE TOOL for Oslo"}]}]}`
		},
		next: func(callID, args string) string {
			return `{"model":"gpt-5-codex","instructions":"You are Codex.","stream":true,
			"tools":[{"type":"function","name":"weather","parameters":` + schemaJSON + `}],
			"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"USE THE TOOL for Oslo"}]},
			{"type":"function_call","call_id":"` + callID + `","name":"weather","arguments":` + mustJSON(args) + `},
			{"type":"function_call_output","call_id":"` + callID + `","output":"snow"}]}`
		},
	},
	OpenAIChat: {
		first: func(stream bool) string {
			return `{"model":"gpt-4.1","stream":` + jsonBool(stream) + `,
			"tools":[{"type":"function","function":{"name":"weather","parameters":` + schemaJSON + `}}],
			"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"use the tool for Oslo"}]}`
		},
		next: func(callID, args string) string {
			return `{"model":"gpt-4.1","stream":true,
			"tools":[{"type":"function","function":{"name":"weather","parameters":` + schemaJSON + `}}],
			"messages":[{"role":"user","content":"use the tool for Oslo"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"` + callID + `","type":"function","function":{"name":"weather","arguments":` + mustJSON(args) + `}}]},
			{"role":"tool","tool_call_id":"` + callID + `","content":"snow"}]}`
		},
	},
}

// geminiTurns are Gemini CLI's turns with a key; a login's are the same
// inside the Code Assist envelope. The body cannot say it streams: the
// path does.
var geminiTurns = struct {
	first func(bool) string
	next  func(callID, args string) string
}{
	first: func(bool) string {
		return `{"contents":[{"role":"user","parts":[{"text":"Please use the tool for Oslo."}]}],
			"systemInstruction":{"role":"user","parts":[{"text":"You are an interactive CLI agent."}]},
			"tools":[{"functionDeclarations":[{"name":"weather","description":"Weather.","parametersJsonSchema":` + schemaJSON + `}]}],
			"generationConfig":{"temperature":1,"topP":0.95,"topK":64,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}}`
	},
	next: func(callID, args string) string {
		return `{"contents":[{"role":"user","parts":[{"text":"Please use the tool for Oslo."}]},
			{"role":"model","parts":[{"functionCall":{"id":"` + callID + `","name":"weather","args":` + args + `}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"` + callID + `","name":"weather","response":{"output":"snow"}}}]}],
			"tools":[{"functionDeclarations":[{"name":"weather","parametersJsonSchema":` + schemaJSON + `}]}]}`
	},
}

func codeAssistEnvelope(request string) string {
	return `{"model":"gemini-2.5-pro","project":"cloudaicompanion-sim","user_prompt_id":"p-1","request":` + request + `}`
}

func init() {
	clientTurns[Gemini] = geminiTurns
	clientTurns[GeminiCodeAssist] = struct {
		first func(stream bool) string
		next  func(callID, args string) string
	}{
		first: func(stream bool) string { return codeAssistEnvelope(geminiTurns.first(stream)) },
		next:  func(callID, args string) string { return codeAssistEnvelope(geminiTurns.next(callID, args)) },
	}
}

func jsonBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// toolCallOf finds the one tool call in a client-wire answer, JSON or SSE.
func toolCallOf(t *testing.T, wire Target, body []byte, stream bool) (id, name, args string) {
	t.Helper()
	if stream {
		var argBuf strings.Builder
		for _, e := range validate(t, wire, body) {
			if string(e.data) == "[DONE]" {
				continue
			}
			m := decodeJSON(t, e.data)
			switch {
			case e.name == "content_block_start" && jstr(m, "content_block", "type") == "tool_use":
				id, name = jstr(m, "content_block", "id"), jstr(m, "content_block", "name")
			case e.name == "content_block_delta":
				argBuf.WriteString(jstr(m, "delta", "partial_json"))
			case e.name == "response.output_item.done" && jstr(m, "item", "type") == "function_call":
				id, name, args = jstr(m, "item", "call_id"), jstr(m, "item", "name"), jstr(m, "item", "arguments")
			case wire == Gemini || wire == GeminiCodeAssist:
				if cid, cname, cargs := geminiCall(t, wire, e.data); cid != "" {
					id, name, args = cid, cname, cargs
				}
			case wire == OpenAIChat:
				for _, c := range list(list(m["choices"])[0].(jmap)["delta"].(jmap)["tool_calls"]) {
					cm := c.(jmap)
					if s := jstr(cm, "id"); s != "" {
						id, name = s, jstr(cm, "function", "name")
					}
					argBuf.WriteString(jstr(cm, "function", "arguments"))
				}
			}
		}
		if args == "" {
			args = argBuf.String()
		}
		return id, name, args
	}
	if wire == Gemini || wire == GeminiCodeAssist {
		return geminiCall(t, wire, body)
	}
	m := decodeJSON(t, body)
	switch wire {
	case Anthropic:
		if m["stop_reason"] != "tool_use" {
			t.Errorf("stop_reason %v", m["stop_reason"])
		}
		for _, b := range list(m["content"]) {
			if bm := b.(jmap); bm["type"] == "tool_use" {
				in, _ := json.Marshal(bm["input"])
				return jstr(bm, "id"), jstr(bm, "name"), string(in)
			}
		}
	case OpenAIResponses:
		for _, it := range list(m["output"]) {
			if im := it.(jmap); im["type"] == "function_call" {
				return jstr(im, "call_id"), jstr(im, "name"), jstr(im, "arguments")
			}
		}
	case OpenAIChat:
		ch := list(m["choices"])[0].(jmap)
		if ch["finish_reason"] != "tool_calls" {
			t.Errorf("finish_reason %v", ch["finish_reason"])
		}
		c := list(ch["message"].(jmap)["tool_calls"])[0].(jmap)
		return jstr(c, "id"), jstr(c, "function", "name"), jstr(c, "function", "arguments")
	}
	return "", "", ""
}

// geminiCall finds the function call in a Gemini answer or chunk.
func geminiCall(t *testing.T, wire Target, body []byte) (id, name, args string) {
	t.Helper()
	if wire == GeminiCodeAssist {
		inner, err := UnwrapCodeAssistResponse(body)
		if err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		body = inner
	}
	var r gResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, c := range r.Candidates {
		if c.Content == nil {
			continue
		}
		for _, p := range c.Content.Parts {
			if fc := p.FunctionCall; fc != nil {
				return fc.ID, fc.Name, string(fc.Args)
			}
		}
	}
	return "", "", ""
}

// simPairs are the client and upstream wires TestAgainstSimulatedUpstreams
// crosses.
var simPairs = []struct{ client, upstream Target }{
	{Anthropic, OpenAIChat},
	{Anthropic, OpenAIResponses},
	{OpenAIResponses, Anthropic},
	{OpenAIChat, Anthropic},
	// Gemini CLI, with a key and with a login, when its pool is spent.
	{Gemini, Anthropic},
	{Gemini, OpenAIChat},
	{Gemini, OpenAIResponses},
	{GeminiCodeAssist, Anthropic},
	{GeminiCodeAssist, OpenAIChat},
	// Claude Code, Codex and Chat clients on a Gemini key or a Google
	// login.
	{Anthropic, Gemini},
	{Anthropic, GeminiCodeAssist},
	{OpenAIResponses, Gemini},
	{OpenAIChat, GeminiCodeAssist},
}

func TestAgainstSimulatedUpstreams(t *testing.T) {
	pairs := simPairs
	upstreamModel := map[Target]string{Anthropic: "claude-sonnet-4-5", OpenAIChat: "gpt-4.1", OpenAIResponses: "gpt-5",
		Gemini: "gemini-2.5-pro", GeminiCodeAssist: "gemini-3-pro-preview"}
	s, project := newSim(sim.Options{Chunks: 4, ChunkText: "ok "})
	t.Cleanup(s.Close)

	for _, p := range pairs {
		for _, stream := range []bool{false, true} {
			name := string(p.client) + "-via-" + string(p.upstream)
			if stream {
				name += "-stream"
			}
			t.Run(name, func(t *testing.T) {
				turns := clientTurns[p.client]
				clientModel := "client-model"

				// Turn 1: the model calls the tool.
				up, _, err := RequestWithOptions(p.client, p.upstream, []byte(turns.first(stream)), upstreamModel[p.upstream], RequestOptions{Stream: stream})
				if err != nil {
					t.Fatal(err)
				}
				rec := callSim(t, s, p.upstream, up, upstreamModel[p.upstream], stream, project)
				if rec.Code != 200 {
					t.Fatalf("upstream refused the translated request: %d %s\n%s", rec.Code, rec.Body, up)
				}
				var answer []byte
				if stream {
					var out bytes.Buffer
					if err := Stream(&out, rec.Body, p.upstream, p.client, clientModel); err != nil {
						t.Fatal(err)
					}
					answer = out.Bytes()
				} else if answer, err = Response(p.upstream, p.client, rec.Body.Bytes(), clientModel); err != nil {
					t.Fatal(err)
				}
				id, tool, args := toolCallOf(t, p.client, answer, stream)
				if tool != "weather" || id == "" {
					t.Fatalf("tool call %q %q in\n%s", id, tool, answer)
				}
				var a struct {
					City *string `json:"city"`
					Days *int    `json:"days"`
				}
				if err := json.Unmarshal([]byte(args), &a); err != nil || a.City == nil || a.Days == nil {
					t.Fatalf("arguments %q do not fill the schema (%v)", args, err)
				}
				if p.client == Anthropic && !anthropicID.MatchString(id) {
					t.Errorf("tool id %q", id)
				}

				// Turn 2: the tool result goes back; the sim answers text.
				up, _, err = RequestWithOptions(p.client, p.upstream, []byte(turns.next(id, args)), upstreamModel[p.upstream], RequestOptions{Stream: true})
				if err != nil {
					t.Fatal(err)
				}
				rec = callSim(t, s, p.upstream, up, upstreamModel[p.upstream], true, project)
				if rec.Code != 200 {
					t.Fatalf("second turn refused: %d %s\n%s", rec.Code, rec.Body, up)
				}
				var out bytes.Buffer
				if err := Stream(&out, rec.Body, p.upstream, p.client, clientModel); err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(out.Bytes(), []byte("ok ")) {
					t.Errorf("text answer lost:\n%s", out.Bytes())
				}
				validate(t, p.client, out.Bytes())
			})
		}
	}
}

// Upstream failures reach the client in its own shape with the type it
// reacts to.
func TestSimulatedUpstreamErrors(t *testing.T) {
	s := sim.New(sim.Options{})
	t.Cleanup(s.Close)
	anth := []byte(clientTurns[Anthropic].first(true))

	t.Run("codex overload inside a 200 stream reaches Claude Code as overloaded_error", func(t *testing.T) {
		s.Script("sk-sim", sim.StreamOverloaded("openai"))
		up, _ := Request(Anthropic, OpenAIResponses, anth, "gpt-5")
		rec := callSim(t, s, OpenAIResponses, up, "gpt-5", true, "")
		var out bytes.Buffer
		if err := Stream(&out, rec.Body, OpenAIResponses, Anthropic, "m"); err != nil {
			t.Fatal(err)
		}
		evs := validate(t, Anthropic, out.Bytes())
		if last := evs[len(evs)-1]; last.name != "error" || jstr(decodeJSON(t, last.data), "error", "type") != "overloaded_error" {
			t.Errorf("%s", out.Bytes())
		}
	})

	t.Run("openai 429 body becomes rate_limit_error", func(t *testing.T) {
		s.Script("sk-sim", sim.RateLimited("openai", 0))
		up, _ := Request(Anthropic, OpenAIChat, anth, "gpt-4.1")
		rec := callSim(t, s, OpenAIChat, up, "gpt-4.1", true, "")
		body := decodeJSON(t, ErrorBody(OpenAIChat, Anthropic, rec.Code, rec.Body.Bytes()))
		if rec.Code != 429 || body["type"] != "error" || jstr(body, "error", "type") != "rate_limit_error" ||
			!strings.HasPrefix(jstr(body, "error", "message"), "Rate limit reached") {
			t.Errorf("%d %v", rec.Code, body)
		}
	})

	t.Run("anthropic 529 becomes an OpenAI overload", func(t *testing.T) {
		s.Script("sk-ant-sim", sim.Overloaded())
		up, _ := Request(OpenAIResponses, Anthropic, []byte(clientTurns[OpenAIResponses].first(false)), "claude-sonnet-4-5")
		rec := callSim(t, s, Anthropic, up, "claude-sonnet-4-5", false, "")
		body := decodeJSON(t, ErrorBody(Anthropic, OpenAIResponses, rec.Code, rec.Body.Bytes()))
		if rec.Code != 529 || jstr(body, "error", "code") != "server_is_overloaded" || jstr(body, "error", "message") != "Overloaded" {
			t.Errorf("%d %v", rec.Code, body)
		}
	})
}

// Google's failures reach Claude Code as the types it waits on or retries,
// and the other providers' reach Gemini CLI with the code and status it
// retries by.
func TestSimulatedGoogleErrors(t *testing.T) {
	s, project := newSim(sim.Options{})
	t.Cleanup(s.Close)
	anth := []byte(clientTurns[Anthropic].first(true))

	t.Run("gemini overload inside a 200 stream reaches Claude Code as overloaded_error", func(t *testing.T) {
		s.Script(simGeminiKey, sim.StreamOverloaded("google"))
		up, _ := Request(Anthropic, Gemini, anth, "gemini-2.5-pro")
		rec := callSim(t, s, Gemini, up, "gemini-2.5-pro", true, "")
		var out bytes.Buffer
		if err := Stream(&out, rec.Body, Gemini, Anthropic, "m"); err != nil {
			t.Fatal(err)
		}
		evs := validate(t, Anthropic, out.Bytes())
		if last := evs[len(evs)-1]; rec.Code != 200 || last.name != "error" || jstr(decodeJSON(t, last.data), "error", "type") != "overloaded_error" {
			t.Errorf("%d %s", rec.Code, out.Bytes())
		}
	})

	t.Run("a spent daily quota becomes rate_limit_error", func(t *testing.T) {
		s.Script(simGeminiKey, sim.GoogleDailyLimit(0))
		up, _ := Request(Anthropic, Gemini, anth, "gemini-2.5-pro")
		rec := callSim(t, s, Gemini, up, "gemini-2.5-pro", true, "")
		body := decodeJSON(t, ErrorBody(Gemini, Anthropic, rec.Code, rec.Body.Bytes()))
		if rec.Code != 429 || jstr(body, "error", "type") != "rate_limit_error" || jstr(body, "error", "message") == "" {
			t.Errorf("%d %v", rec.Code, body)
		}
	})

	t.Run("a login's exhausted capacity reaches Codex as a rate limit", func(t *testing.T) {
		s.Script(simGoogleToken, sim.GoogleCapacityExhausted(time.Hour))
		up, _ := Request(OpenAIResponses, GeminiCodeAssist, []byte(clientTurns[OpenAIResponses].first(true)), "gemini-2.5-pro")
		rec := callSim(t, s, GeminiCodeAssist, up, "gemini-2.5-pro", true, project)
		body := decodeJSON(t, ErrorBody(GeminiCodeAssist, OpenAIResponses, rec.Code, rec.Body.Bytes()))
		if rec.Code != 429 || jstr(body, "error", "code") != "rate_limit_exceeded" || !strings.Contains(jstr(body, "error", "message"), "exhausted your capacity") {
			t.Errorf("%d %v", rec.Code, body)
		}
	})

	t.Run("anthropic 529 reaches Gemini CLI as 503 UNAVAILABLE", func(t *testing.T) {
		s.Script("sk-ant-sim", sim.Overloaded())
		up, _, _ := RequestWithOptions(Gemini, Anthropic, []byte(clientTurns[Gemini].first(false)), "claude-sonnet-4-5", RequestOptions{})
		rec := callSim(t, s, Anthropic, up, "claude-sonnet-4-5", false, "")
		body := decodeJSON(t, ErrorBody(Anthropic, Gemini, rec.Code, rec.Body.Bytes()))
		if n, _ := jnum(body, "error", "code"); rec.Code != 529 || n != 503 || jstr(body, "error", "status") != "UNAVAILABLE" {
			t.Errorf("%d %v", rec.Code, body)
		}
	})

	t.Run("an OpenAI overload inside a stream reaches Gemini CLI as Google's bare error", func(t *testing.T) {
		s.Script("sk-sim", sim.StreamOverloaded("openai"))
		up, _, _ := RequestWithOptions(Gemini, OpenAIResponses, []byte(clientTurns[Gemini].first(true)), "gpt-5", RequestOptions{Stream: true})
		rec := callSim(t, s, OpenAIResponses, up, "gpt-5", true, "")
		var out bytes.Buffer
		if err := Stream(&out, rec.Body, OpenAIResponses, Gemini, "gemini-2.5-pro"); err != nil {
			t.Fatal(err)
		}
		evs := validate(t, Gemini, out.Bytes())
		if last := evs[len(evs)-1]; last.name != "bare" || !bytes.Contains(last.data, []byte(`"code":503`)) {
			t.Errorf("%s", out.Bytes())
		}
	})
}

// Claude Code on a ChatGPT subscription: the Codex backend refuses
// max_output_tokens, stream false and missing instructions (each a 400
// seen from chatgpt.com), so the translated request must have none of
// them, and a JSON client gets its answer collected from the stream.
func TestClaudeCodeViaChatGPTBackend(t *testing.T) {
	s := sim.New(sim.Options{Chunks: 3, ChunkText: "ok "})
	t.Cleanup(s.Close)
	for _, stream := range []bool{false, true} {
		t.Run("stream="+jsonBool(stream), func(t *testing.T) {
			up, notes, err := RequestWithNotes(Anthropic, ChatGPTCodex, []byte(clientTurns[Anthropic].first(stream)), "gpt-5-codex")
			if err != nil {
				t.Fatal(err)
			}
			m := decodeJSON(t, up)
			if _, ok := m["max_output_tokens"]; ok || m["stream"] != true || m["store"] != false || jstr(m, "instructions") == "" {
				t.Fatalf("request the backend refuses: %s", up)
			}
			if _, ok := m["user"]; ok {
				t.Errorf("end-user id sent: %s", up)
			}
			if !strings.Contains(strings.Join(notes, "\n"), "max_tokens: dropped") {
				t.Errorf("notes %q", notes)
			}
			rec := callSim(t, s, ChatGPTCodex, up, "gpt-5-codex", true, "")
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			var answer []byte
			if stream {
				var out bytes.Buffer
				if err := Stream(&out, rec.Body, ChatGPTCodex, Anthropic, "claude-sonnet-4-5"); err != nil {
					t.Fatal(err)
				}
				answer = out.Bytes()
			} else if answer, err = Collect(ChatGPTCodex, Anthropic, rec.Body, "claude-sonnet-4-5"); err != nil {
				t.Fatal(err)
			}
			id, tool, args := toolCallOf(t, Anthropic, answer, stream)
			if !anthropicID.MatchString(id) || tool != "weather" || !jsonObject(args) {
				t.Errorf("tool call %q %q %q in\n%s", id, tool, args, answer)
			}
		})
	}
}

// geminiPath is the Gemini API path of a request to model:
// /v1beta/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse for a stream (without alt=sse the API
// streams a JSON array, which no translator reads).
func geminiPath(model string, stream bool) string {
	p := "/v1beta/models/" + url.PathEscape(strings.TrimPrefix(model, "models/"))
	if stream {
		return p + ":streamGenerateContent?alt=sse"
	}
	return p + ":generateContent"
}

// codeAssistPath is the Code Assist path of a generateContent request
// (the model is in the envelope).
func codeAssistPath(stream bool) string {
	if stream {
		return "/v1internal:streamGenerateContent?alt=sse"
	}
	return "/v1internal:generateContent"
}
