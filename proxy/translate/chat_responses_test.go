package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// Each row is one thing Chat ⇄ Responses must carry, in a body shaped as
// the OpenAI SDK's types spell it; want lists paths in the translated
// body and the JSON each must hold (null: absent).
const (
	chatUser = `"messages":[{"role":"user","content":"hi"}]`
	respUser = `"input":"hi"`
)

var carryCases = []struct {
	name     string
	from, to Target
	model    string
	body     string
	want     map[string]string
}{
	{"max_completion_tokens to max_output_tokens", OpenAIChat, OpenAIResponses, "gpt-5",
		`{"model":"m",` + chatUser + `,"max_completion_tokens":900}`,
		map[string]string{"max_output_tokens": "900"}},
	{"legacy max_tokens to max_output_tokens", OpenAIChat, OpenAIResponses, "gpt-4.1",
		`{"model":"m",` + chatUser + `,"max_tokens":300}`,
		map[string]string{"max_output_tokens": "300"}},
	{"max_output_tokens to max_completion_tokens on a reasoning model", OpenAIResponses, OpenAIChat, "o4-mini",
		`{"model":"m",` + respUser + `,"max_output_tokens":700}`,
		map[string]string{"max_completion_tokens": "700", "max_tokens": "null"}},
	{"max_output_tokens to max_tokens elsewhere", OpenAIResponses, OpenAIChat, "deepseek-chat",
		`{"model":"m",` + respUser + `,"max_output_tokens":700}`,
		map[string]string{"max_tokens": "700", "max_completion_tokens": "null"}},
	{"reasoning_effort to reasoning.effort", OpenAIChat, OpenAIResponses, "gpt-5",
		`{"model":"m",` + chatUser + `,"reasoning_effort":"minimal"}`,
		map[string]string{"reasoning": `{"effort":"minimal"}`}},
	{"reasoning.effort to reasoning_effort", OpenAIResponses, OpenAIChat, "gpt-5-mini",
		`{"model":"m",` + respUser + `,"reasoning":{"effort":"high","summary":"auto"}}`,
		map[string]string{"reasoning_effort": `"high"`}},
	{"system and developer messages to instructions", OpenAIChat, OpenAIResponses, "gpt-5",
		`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"developer","content":[{"type":"text","text":"D"}]},{"role":"user","content":"hi"}]}`,
		map[string]string{"instructions": `"S\n\nD"`}},
	{"instructions and developer items to a system message", OpenAIResponses, OpenAIChat, "gpt-4.1",
		`{"model":"m","instructions":"I","input":[{"role":"developer","content":"D"},{"role":"user","content":"hi"}]}`,
		map[string]string{"messages.0": `{"role":"system","content":"I\n\nD"}`}},
	{"image_url to input_image", OpenAIChat, OpenAIResponses, "gpt-4.1",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"high"}}]}]}`,
		map[string]string{"input.0.content.0": `{"type":"input_image","image_url":"https://x/a.png","detail":"high"}`}},
	{"input_image to image_url", OpenAIResponses, OpenAIChat, "gpt-4.1",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBO","detail":"auto"}]}]}`,
		map[string]string{"messages.0.content.0": `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO","detail":"auto"}}`}},
	{"parallel tool calls and their results", OpenAIChat, OpenAIResponses, "gpt-4.1",
		`{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}},{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"one"},{"role":"tool","tool_call_id":"call_2","content":"two"}]}`,
		map[string]string{
			"input.1": `{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}`,
			"input.2": `{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"}`,
			"input.3": `{"type":"function_call_output","call_id":"call_1","output":"one"}`,
			"input.4": `{"type":"function_call_output","call_id":"call_2","output":"two"}`}},
	{"a tool result with an image", OpenAIResponses, OpenAIChat, "gpt-4.1",
		`{"model":"m","input":[{"role":"user","content":"look"},{"type":"function_call","call_id":"call_9","name":"shot","arguments":"{}"},{"type":"function_call_output","call_id":"call_9","output":[{"type":"input_image","image_url":"https://x/s.png"}]}]}`,
		map[string]string{
			"messages.2": `{"role":"tool","content":"[1 image(s) of this result follow in the next user message]","tool_call_id":"call_9"}`,
			"messages.3": `{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_9:"},{"type":"image_url","image_url":{"url":"https://x/s.png"}}]}`}},
	{"tools, strict and choice", OpenAIResponses, OpenAIChat, "gpt-4.1",
		`{"model":"m",` + respUser + `,"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false}`,
		map[string]string{
			"tools.0":             `{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":true}}`,
			"tool_choice":         `{"type":"function","function":{"name":"f"}}`,
			"parallel_tool_calls": "false"}},
	{"stream asks for usage", OpenAIResponses, OpenAIChat, "gpt-4.1",
		`{"model":"m",` + respUser + `,"stream":true}`,
		map[string]string{"stream": "true", "stream_options": `{"include_usage":true}`}},
	{"json_object format", OpenAIChat, OpenAIResponses, "gpt-4.1",
		`{"model":"m",` + chatUser + `,"response_format":{"type":"json_object"}}`,
		map[string]string{"text": `{"format":{"type":"json_object"}}`}},
	{"an end-user id", OpenAIChat, ChatGPTCodex, "gpt-5-codex",
		`{"model":"m",` + chatUser + `,"user":"u-1"}`,
		map[string]string{"prompt_cache_key": `"u-1"`, "user": "null", "stream": "true", "store": "false"}},
}

func TestChatResponsesCarry(t *testing.T) {
	for _, tc := range carryCases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Request(tc.from, tc.to, []byte(tc.body), tc.model)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			for p, want := range tc.want {
				var w any
				if err := json.Unmarshal([]byte(want), &w); err != nil {
					t.Fatalf("want %s: %v", p, err)
				}
				if got := at(doc, p); !reflect.DeepEqual(got, w) {
					g, _ := json.Marshal(got)
					t.Errorf("%s = %s, want %s\n%s", p, g, want, out)
				}
			}
		})
	}
}

// at walks a decoded JSON document by a dotted path of keys and indexes.
func at(doc any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[k]
		case []any:
			i := 0
			for _, c := range k {
				i = i*10 + int(c-'0')
			}
			if i >= len(v) {
				return nil
			}
			doc = v[i]
		default:
			return nil
		}
	}
	return doc
}

// A Chat client that asked for stream_options.include_usage gets the
// usage in a chunk of its own after the finish, as OpenAI sends it; one
// that did not gets it on the finishing chunk.
func TestChatStreamIncludeUsage(t *testing.T) {
	src := readFile(t, "testdata/streams/responses_parallel.sse")
	for _, include := range []bool{true, false} {
		body := `{"model":"m","messages":[],"stream":true}`
		if include {
			body = `{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}`
		}
		out := streamWith(OpenAIResponses, OpenAIChat, src, ClientAnswerOptions(OpenAIChat, []byte(body)))
		evs := validate(t, OpenAIChat, out)
		finish, last := string(evs[len(evs)-3].data), string(evs[len(evs)-2].data)
		if include {
			if strings.Contains(finish, `"usage"`) || !strings.Contains(last, `"choices":[]`) || !strings.Contains(last, `"cached_tokens":4864`) {
				t.Errorf("include_usage: finish %s, last %s", finish, last)
			}
		} else if !strings.Contains(last, `"finish_reason":"tool_calls"`) || !strings.Contains(last, `"reasoning_tokens":256`) {
			t.Errorf("no include_usage: last %s", last)
		}
	}
}

// A Codex CLI request on a ChatGPT login goes byte for byte; the
// backend's shape fixes the SDK's.
func TestCodexSameWireKeepsCodexBytes(t *testing.T) {
	in := readFile(t, "testdata/requests/codex.json")
	out, notes, err := RequestWithNotes(OpenAIResponses, ChatGPTCodex, in, "gpt-5-codex")
	if err != nil || !bytes.Equal(out, in) || len(notes) != 0 {
		t.Errorf("Codex's request changed (%v, notes %q)", err, notes)
	}
	out, _, err = RequestWithNotes(OpenAIResponses, ChatGPTCodex,
		[]byte(`{"model":"gpt-5","instructions":[{"role":"developer","content":"D"}],"input":"hi"}`), "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	_ = json.Unmarshal(out, &doc)
	if at(doc, "instructions") != neutralInstructions || at(doc, "input.0.role") != "developer" || at(doc, "input.1.content") != "hi" {
		t.Errorf("instructions as items: %s", out)
	}
}

// Any body either translates to valid JSON or fails with an error; none
// panics: requests both ways and to a ChatGPT login, answers, and
// streams collected.
func FuzzChatResponses(f *testing.F) {
	for _, file := range []string{"requests/editor_chat.json", "requests/sdk_chat_schema.json", "requests/codex.json",
		"requests/sdk_responses.json", "responses/chat_refusal.json", "responses/responses_refusal.json",
		"responses/chat_parallel_reasoning.json", "streams/responses_parallel.sse", "streams/chat_refusal.sse"} {
		b, err := os.ReadFile("testdata/" + file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		requests := [][2]Target{{OpenAIChat, OpenAIResponses}, {OpenAIResponses, OpenAIChat}, {OpenAIChat, ChatGPTCodex}, {OpenAIResponses, ChatGPTCodex}}
		for _, p := range requests {
			if out, err := Request(p[0], p[1], b, "gpt-5"); err == nil && !json.Valid(out) {
				t.Fatalf("%s to %s: invalid request %s", p[0], p[1], out)
			}
		}
		// Answers from the upstream's wire to the client's; a JSON
		// answer of one wire to itself passes untouched and is not
		// translation, but a collected stream always is.
		answers := [][2]Target{{OpenAIChat, OpenAIResponses}, {OpenAIResponses, OpenAIChat}, {ChatGPTCodex, OpenAIResponses}}
		for _, p := range answers {
			if out, err := Response(p[0], p[1], b, "m"); err == nil && wire(p[0]) != wire(p[1]) && !json.Valid(out) {
				t.Fatalf("%s to %s: invalid answer %s", p[0], p[1], out)
			}
			if out, err := Collect(p[0], p[1], bytes.NewReader(b), "m"); err == nil && !json.Valid(out) {
				t.Fatalf("%s to %s: invalid collected answer %s", p[0], p[1], out)
			}
		}
	})
}

// CodexReady says yes to Codex CLI's own request only; the SDK's, or
// Codex's with one refused field added, is shaped.
func TestCodexReady(t *testing.T) {
	compact := func(file string) []byte {
		var buf bytes.Buffer
		if err := json.Compact(&buf, readFile(t, file)); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	codex := compact("testdata/requests/codex.json")
	for _, b := range [][]byte{
		codex,
		readFile(t, "testdata/requests/codex.json"), // indented
		// A refused field's name inside the conversation is no field.
		bytes.Replace(codex, []byte(`"input":[`), []byte(`"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"{\"max_output_tokens\":1}"}]},`), 1),
	} {
		if !CodexReady(b) {
			t.Errorf("not ready: %.120s", b)
		}
	}
	for _, b := range [][]byte{
		compact("testdata/requests/sdk_responses.json"),
		bytes.Replace(codex, []byte(`"stream":true`), []byte(`"stream":true,"max_output_tokens":100`), 1),
		bytes.Replace(codex, []byte(`"store":false`), []byte(`"store":true`), 1),
		bytes.Replace(codex, []byte(`"instructions":"You`), []byte(`"instructions":"","x":"You`), 1),
	} {
		if CodexReady(b) {
			t.Errorf("ready: %.120s", b)
		}
	}
}

// A call of a namespaced tool (Codex CLI's sub-agents), offered under
// its flat name, comes back to the Responses client by its namespace and
// name: streamed, collected and as JSON.
func TestNamespacedCallsComeBackNamed(t *testing.T) {
	o := ClientAnswerOptions(OpenAIResponses, readFile(t, "testdata/requests/codex_0171.json"))
	call := `{"id":"call_1","type":"function","function":{"name":"multi_agent_v1__close_agent","arguments":"{\"target\":\"a\"}"}}`
	stream := "data: " + chatRole + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[` +
		strings.Replace(call, `{"id"`, `{"index":0,"id"`, 1) + `]},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	out := streamWith(OpenAIChat, OpenAIResponses, []byte(stream), o)
	validate(t, OpenAIResponses, out)
	collected, err := CollectWithOptions(OpenAIChat, OpenAIResponses, strings.NewReader(stream), "m", o)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := ResponseWithOptions(OpenAIChat, OpenAIResponses,
		[]byte(`{"id":"chatcmpl-2","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[`+call+`]},"finish_reason":"tool_calls"}]}`), "m", o)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"stream": out, "collected": collected, "json": answer} {
		if !bytes.Contains(b, []byte(`"name":"close_agent","namespace":"multi_agent_v1"`)) || bytes.Contains(b, []byte("multi_agent_v1__")) {
			t.Errorf("%s: the call is not named by its namespace:\n%s", name, b)
		}
	}
}

// streamWith translates the stream src event by event, as the proxy feeds a
// StreamTranslator, and returns what the client gets.
func streamWith(from, to Target, src []byte, o AnswerOptions) []byte {
	tr := NewStreamTranslatorWithOptions(from, to, "m", o)
	var out bytes.Buffer
	r := newUpstreamEvents(bytes.NewReader(src), from)
	for {
		ev, data, err := r.next()
		if err != nil {
			break
		}
		b, _ := tr.Feed(ev, data)
		out.Write(b)
	}
	out.Write(tr.Close())
	return out.Bytes()
}

// Errors cross between the OpenAI wires with their type, code and
// message: error bodies, the Codex backend's own {"detail"}, and errors
// inside a stream both ways.
func TestChatResponsesErrors(t *testing.T) {
	const rateLimited = `{"error":{"message":"Rate limit reached for gpt-5 in organization org-1 on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	for _, tc := range []struct {
		name     string
		from, to Target
		status   int
		body     string
		want     string
	}{
		{"a rate limit", OpenAIResponses, OpenAIChat, 429, rateLimited,
			`{"error":{"message":"Rate limit reached for gpt-5 in organization org-1 on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
		{"the Codex backend's refusal", ChatGPTCodex, OpenAIChat, 400, `{"detail":"Unsupported parameter: max_output_tokens"}`,
			`{"error":{"message":"Unsupported parameter: max_output_tokens","type":"invalid_request_error","param":null,"code":null}}`},
		{"a chat upstream's bad request", OpenAIChat, OpenAIResponses, 400,
			`{"error":{"message":"This model's maximum context length is 65536 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			`{"error":{"message":"This model's maximum context length is 65536 tokens.","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`},
	} {
		if got := ErrorBody(tc.from, tc.to, tc.status, []byte(tc.body)); string(got) != tc.want {
			t.Errorf("%s: %s", tc.name, got)
		}
	}

	failed := "event: response.created\ndata: " + respCreated + "\n\n" +
		`event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"output":[]}}` + "\n\n"
	out := streamWith(OpenAIResponses, OpenAIChat, []byte(failed), AnswerOptions{})
	evs := validate(t, OpenAIChat, out)
	if last := string(evs[len(evs)-1].data); !strings.Contains(last, `"message":"slow down"`) || !strings.Contains(last, `"code":"rate_limit_exceeded"`) {
		t.Errorf("response.failed became %s", last)
	}
	chatErr := "data: " + chatRole + "\n\n" + `data: {"error":{"message":"overloaded","type":"server_error","param":null,"code":"server_is_overloaded"}}` + "\n\n"
	out = streamWith(OpenAIChat, OpenAIResponses, []byte(chatErr), AnswerOptions{})
	evs = validate(t, OpenAIResponses, out)
	if last := evs[len(evs)-1]; last.name != "response.failed" || !strings.Contains(string(last.data), `"code":"server_is_overloaded"`) {
		t.Errorf("the chat error chunk became %s %s", last.name, last.data)
	}
}

// CodexReady never says ready of a body the backend's shape would change:
// shaping a ready body gives it back byte for byte, with no note.
func FuzzCodexReady(f *testing.F) {
	for _, file := range []string{"codex.json", "codex_0171.json", "sdk_responses.json"} {
		f.Add(readFileF(f, "testdata/requests/"+file))
	}
	f.Add([]byte(`{"model":"m","stream":true,"store":false,"instructions":"i","stream":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !CodexReady(b) || !json.Valid(b) {
			return
		}
		var m struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(b, &m) != nil || m.Model == "" {
			return // the model is set either way, so a body without one changes
		}
		out, notes, err := RequestWithNotes(OpenAIResponses, ChatGPTCodex, b, m.Model)
		if err == nil && (!bytes.Equal(out, b) || len(notes) > 0) {
			t.Fatalf("ready, yet shaped (%q):\n%s\n%s", notes, b, out)
		}
	})
}

func readFileF(f *testing.F, file string) []byte {
	b, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
