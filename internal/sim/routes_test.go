package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	keyA = "sk-ant-api03-test-a"
	keyB = "sk-ant-api03-test-b"
	keyO = "sk-proj-test-o"

	messagesBody = `{"model":"claude-opus-4-1","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	responseBody = `{"model":"gpt-5-codex","instructions":"Be brief.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`
	chatBody     = `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`
)

func streaming(body string) string { return strings.Replace(body, "{", `{"stream":true,`, 1) }

// codexBody is a request the ChatGPT backend takes: it only streams.
var codexBody = streaming(responseBody)

func TestMessagesJSON(t *testing.T) {
	s := start(t, Options{})
	status, hdr, body := post(t, s, "/v1/messages", keyA, messagesBody)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	m := decode(t, body)
	for path, want := range map[string]string{
		"type": "message", "role": "assistant", "model": "claude-opus-4-1",
		"content.0.type": "text", "content.0.text": strings.Repeat("hello ", 5),
		"stop_reason": "end_turn",
	} {
		if got := str(t, m, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if !strings.HasPrefix(str(t, m, "id"), "msg_") {
		t.Errorf("id %q", str(t, m, "id"))
	}
	if num(t, m, "usage.input_tokens") < 1 || num(t, m, "usage.output_tokens") < 1 {
		t.Errorf("usage %v", get(t, m, "usage"))
	}
	if !strings.HasPrefix(hdr.Get("request-id"), "req_") {
		t.Errorf("request-id %q", hdr.Get("request-id"))
	}
	if got := hdr.Get("anthropic-ratelimit-requests-remaining"); got != "3999" {
		t.Errorf("requests-remaining %q", got)
	}
	if hdr.Get("anthropic-ratelimit-tokens-reset") == "" {
		t.Error("no tokens-reset header")
	}
}

// The sequence Claude Code needs, each event's data a JSON object whose
// type names the event.
func TestMessagesStream(t *testing.T) {
	s := start(t, Options{Chunks: 3, ChunkText: "ab"})
	resp := call(t, guard(t), s, "POST", "/v1/messages?beta=true", keyA, streaming(messagesBody))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content-type %q", ct)
	}
	evs := events(t, resp.Body)
	want := []string{"message_start", "content_block_start", "ping",
		"content_block_delta", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(names(evs), want) {
		t.Fatalf("events %v\nwant %v", names(evs), want)
	}
	var text strings.Builder
	for _, ev := range evs {
		m := decode(t, ev.Data)
		if str(t, m, "type") != ev.Name {
			t.Errorf("event %s carries type %q", ev.Name, str(t, m, "type"))
		}
		switch ev.Name {
		case "message_start":
			if got := str(t, m, "message.model"); got != "claude-opus-4-1" {
				t.Errorf("model %q", got)
			}
			if num(t, m, "message.usage.input_tokens") < 1 {
				t.Error("no input tokens")
			}
		case "content_block_start":
			if str(t, m, "content_block.type") != "text" {
				t.Errorf("block %v", m)
			}
		case "content_block_delta":
			if str(t, m, "delta.type") != "text_delta" {
				t.Errorf("delta %v", m)
			}
			text.WriteString(str(t, m, "delta.text"))
		case "message_delta":
			if str(t, m, "delta.stop_reason") != "end_turn" || num(t, m, "usage.output_tokens") < 1 {
				t.Errorf("message_delta %v", m)
			}
		}
	}
	if text.String() != "ababab" {
		t.Errorf("text %q", text.String())
	}
}

func TestResponsesJSON(t *testing.T) {
	for _, path := range []string{"/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			s := start(t, Options{})
			status, hdr, body := post(t, s, path, keyO, responseBody)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			m := decode(t, body)
			if str(t, m, "object") != "response" || str(t, m, "status") != "completed" || str(t, m, "model") != "gpt-5-codex" {
				t.Errorf("response %s", body)
			}
			if got := str(t, m, "output.0.content.0.text"); got != strings.Repeat("hello ", 5) {
				t.Errorf("text %q", got)
			}
			if num(t, m, "usage.total_tokens") != num(t, m, "usage.input_tokens")+num(t, m, "usage.output_tokens") {
				t.Errorf("usage %v", get(t, m, "usage"))
			}
			// The ChatGPT backend reports plan usage, not API tiers.
			codex := strings.HasPrefix(path, "/backend-api/")
			if got := hdr.Get("x-ratelimit-remaining-requests") != ""; got == codex {
				t.Errorf("x-ratelimit headers present=%v on %s", got, path)
			}
		})
	}
}

// The sequence Codex CLI needs, with sequence numbers in order.
func TestResponsesStream(t *testing.T) {
	for _, path := range []string{"/v1/responses", "/backend-api/codex/responses"} {
		t.Run(path, func(t *testing.T) {
			s := start(t, Options{Chunks: 2})
			resp := call(t, guard(t), s, "POST", path, keyO, streaming(responseBody))
			defer resp.Body.Close()
			evs := events(t, resp.Body)
			want := []string{"response.created", "response.in_progress", "response.output_item.added",
				"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
				"response.output_text.done", "response.content_part.done", "response.output_item.done",
				"response.completed"}
			if !slices.Equal(names(evs), want) {
				t.Fatalf("events %v\nwant %v", names(evs), want)
			}
			var text strings.Builder
			for i, ev := range evs {
				m := decode(t, ev.Data)
				if str(t, m, "type") != ev.Name || num(t, m, "sequence_number") != int64(i) {
					t.Errorf("event %d %s: %s", i, ev.Name, ev.Data)
				}
				if ev.Name == "response.output_text.delta" {
					text.WriteString(str(t, m, "delta"))
				}
			}
			done := decode(t, evs[6].Data)
			if str(t, done, "text") != text.String() || text.String() != "hello hello " {
				t.Errorf("deltas %q, done %q", text.String(), str(t, done, "text"))
			}
			completed := decode(t, evs[len(evs)-1].Data)
			if str(t, completed, "response.status") != "completed" ||
				str(t, completed, "response.output.0.content.0.text") != text.String() ||
				num(t, completed, "response.usage.output_tokens") < 1 ||
				num(t, completed, "response.usage.input_tokens_details.cached_tokens") != 0 {
				t.Errorf("completed %s", evs[len(evs)-1].Data)
			}
			if str(t, completed, "response.id") != str(t, decode(t, evs[0].Data), "response.id") {
				t.Error("response id changed between created and completed")
			}
		})
	}
}

func TestChatJSON(t *testing.T) {
	s := start(t, Options{})
	status, hdr, body := post(t, s, "/v1/chat/completions", keyO, chatBody)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	m := decode(t, body)
	if str(t, m, "object") != "chat.completion" || str(t, m, "model") != "gpt-4.1" ||
		str(t, m, "choices.0.message.role") != "assistant" ||
		str(t, m, "choices.0.message.content") != strings.Repeat("hello ", 5) ||
		str(t, m, "choices.0.finish_reason") != "stop" ||
		num(t, m, "usage.completion_tokens") < 1 {
		t.Errorf("completion %s", body)
	}
	if !strings.HasPrefix(hdr.Get("x-request-id"), "req_") || hdr.Get("x-ratelimit-reset-requests") == "" {
		t.Errorf("headers %v", hdr)
	}
}

func TestChatStream(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		t.Run("include_usage="+map[bool]string{false: "false", true: "true"}[includeUsage], func(t *testing.T) {
			s := start(t, Options{Chunks: 4})
			body := streaming(chatBody)
			if includeUsage {
				body = strings.Replace(body, "{", `{"stream_options":{"include_usage":true},`, 1)
			}
			resp := call(t, guard(t), s, "POST", "/v1/chat/completions", keyO, body)
			defer resp.Body.Close()
			evs := events(t, resp.Body)
			if last := evs[len(evs)-1]; string(last.Data) != "[DONE]" || last.Name != "" {
				t.Fatalf("last event %q %q", last.Name, last.Data)
			}
			var text strings.Builder
			var finish string
			var usageChunks int
			for _, ev := range evs[:len(evs)-1] {
				if ev.Name != "" {
					t.Errorf("chat chunk with event name %q", ev.Name)
				}
				m := decode(t, ev.Data)
				if str(t, m, "object") != "chat.completion.chunk" || str(t, m, "model") != "gpt-4.1" {
					t.Errorf("chunk %s", ev.Data)
				}
				choices := get(t, m, "choices").([]any)
				if len(choices) == 0 {
					usageChunks++
					if num(t, m, "usage.total_tokens") < 2 {
						t.Errorf("usage chunk %s", ev.Data)
					}
					continue
				}
				if c, ok := get(t, m, "choices.0.delta").(map[string]any)["content"].(string); ok {
					text.WriteString(c)
				}
				if f, ok := get(t, m, "choices.0.finish_reason").(string); ok {
					finish = f
				}
			}
			if text.String() != strings.Repeat("hello ", 4) || finish != "stop" {
				t.Errorf("text %q finish %q", text.String(), finish)
			}
			if want := map[bool]int{false: 0, true: 1}[includeUsage]; usageChunks != want {
				t.Errorf("%d usage chunks, want %d", usageChunks, want)
			}
		})
	}
}

func TestCountTokensModelsEmbeddings(t *testing.T) {
	s := start(t, Options{})

	status, _, body := post(t, s, "/v1/messages/count_tokens", keyA, messagesBody)
	if status != 200 || num(t, decode(t, body), "input_tokens") < 1 {
		t.Errorf("count_tokens %d %s", status, body)
	}

	resp := call(t, guard(t), s, "GET", "/v1/models", keyO, "")
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("models %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) == 0 || list.Data[0].Object != "model" || list.Data[0].ID == "" {
		t.Errorf("models %+v", list)
	}

	type embeddings struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	embed := func(body string) embeddings {
		t.Helper()
		status, _, b := post(t, s, "/v1/embeddings", keyO, body)
		var e embeddings
		if err := json.Unmarshal(b, &e); err != nil || status != 200 || e.Object != "list" || e.Usage.PromptTokens < 1 {
			t.Fatalf("embeddings %d %v %s", status, err, b)
		}
		return e
	}
	floats := embed(`{"model":"text-embedding-3-small","input":["a","b","a"],"dimensions":8}`)
	if len(floats.Data) != 3 {
		t.Fatalf("%d embeddings for 3 inputs", len(floats.Data))
	}
	var vecs [3][]float64
	for i, d := range floats.Data {
		if d.Index != i || d.Object != "embedding" || json.Unmarshal(d.Embedding, &vecs[i]) != nil || len(vecs[i]) != 8 {
			t.Fatalf("embedding %d: %+v", i, d)
		}
		var norm float64
		for _, f := range vecs[i] {
			norm += f * f
		}
		if math.Abs(norm-1) > 1e-3 {
			t.Errorf("embedding %d norm² %v", i, norm)
		}
	}
	if !reflect.DeepEqual(vecs[0], vecs[2]) || reflect.DeepEqual(vecs[0], vecs[1]) {
		t.Error("equal inputs must embed equally, different ones differently")
	}

	// The OpenAI SDKs ask for base64 by default: little-endian float32s.
	b64 := embed(`{"model":"text-embedding-3-small","input":"a","dimensions":8,"encoding_format":"base64"}`)
	var enc string
	if len(b64.Data) != 1 || json.Unmarshal(b64.Data[0].Embedding, &enc) != nil {
		t.Fatalf("base64 embedding %+v", b64.Data)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) != 32 {
		t.Fatalf("base64 %q: %v", enc, err)
	}
	for i := range 8 {
		f := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if math.Abs(float64(f)-vecs[0][i]) > 1e-6 {
			t.Errorf("base64 component %d = %v, float form %v", i, f, vecs[0][i])
		}
	}
}

// Refusals before any script: each in its provider's shape.
func TestRefusalShapes(t *testing.T) {
	s := start(t, Options{})
	for _, tc := range []struct {
		name, method, path, cred, body string
		status                         int
		errType                        string // anthropic error.type or openai error.type
	}{
		{"anthropic unknown path", "POST", "/v1/messages/nope", keyA, "{}", 404, "not_found_error"},
		{"openai unknown path", "POST", "/v1/nope", keyO, "{}", 404, "invalid_request_error"},
		{"wrong method", "GET", "/v1/chat/completions", keyO, "", 404, "invalid_request_error"},
		{"anthropic no key", "POST", "/v1/messages", "", messagesBody, 401, "authentication_error"},
		{"openai no key", "POST", "/v1/responses", "", responseBody, 401, "invalid_request_error"},
		{"codex no key", "POST", "/backend-api/codex/responses", "", responseBody, 401, "invalid_request_error"},
		{"anthropic bad json", "POST", "/v1/messages", keyA, "{", 400, "invalid_request_error"},
		{"openai bad json", "POST", "/v1/chat/completions", keyO, "nope", 400, "invalid_request_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := call(t, guard(t), s, tc.method, tc.path, tc.cred, tc.body)
			defer resp.Body.Close()
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string  `json:"type"`
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
				RequestID string `json:"request_id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || body.Error.Type != tc.errType || body.Error.Message == "" {
				t.Errorf("got %d %+v", resp.StatusCode, body)
			}
			if providerOf(tc.path) == Anthropic {
				if body.Type != "error" || body.RequestID != resp.Header.Get("request-id") || body.RequestID == "" {
					t.Errorf("anthropic envelope %+v, request-id %q", body, resp.Header.Get("request-id"))
				}
			} else if body.Type != "" {
				t.Errorf("openai error with a top-level type: %+v", body)
			}
		})
	}
	if got := len(s.Requests()); got != 8 {
		t.Errorf("%d records, want every refused request recorded", got)
	}
}

func TestMissingKeyIsRecordedWithoutCredential(t *testing.T) {
	s := start(t, Options{})
	post(t, s, "/v1/messages", "", messagesBody)
	recs := s.Requests()
	if len(recs) != 1 || recs[0].Credential != "" || recs[0].Status != http.StatusUnauthorized {
		t.Errorf("records %+v", recs)
	}
}

// doc.go's route list is the package's contract with its users: every
// route the sim answers is in it.
func TestDocListsEveryRoute(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	var paths []string
	for key := range routes {
		_, path, _ := strings.Cut(key, " ")
		paths = append(paths, path)
	}
	for key := range codeAssistRoutes {
		_, path, _ := strings.Cut(key, " ")
		paths = append(paths, strings.TrimPrefix(path, "/v1internal")) // ":method", listed once per line or after a comma
	}
	paths = append(paths, "/v1internal/{operation}", "/v1beta/models/{model}:generateContent",
		"/v1beta/models/{model}:streamGenerateContent", "/v1beta/models/{model}:countTokens", "/v1beta/models/{model}")
	for _, p := range paths {
		if !strings.Contains(text, p) {
			t.Errorf("doc.go does not list %s", p)
		}
	}
	// Every Google pattern listed is one the sim routes.
	for _, p := range []struct{ method, path string }{
		{"POST", "/v1beta/models/gemini-2.5-pro:generateContent"}, {"POST", "/v1beta/models/x:streamGenerateContent"},
		{"POST", "/v1beta/models/x:countTokens"}, {"GET", "/v1beta/models"}, {"GET", "/v1beta/models/x"},
	} {
		if h, _ := geminiRoute(p.method, p.path); h == nil {
			t.Errorf("%s %s is not routed", p.method, p.path)
		}
	}
	if codeAssistOperation("GET", "/v1internal/operations/abc") == nil {
		t.Error("the operation poll is not routed")
	}
}
