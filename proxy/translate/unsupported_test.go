package translate

import (
	"errors"
	"strings"
	"testing"
)

// msgs is a minimal conversation for the rows to build on.
const msgs = `"messages":[{"role":"user","content":"hi"}]`

var unsupportedTests = []struct {
	name     string
	from, to Target
	body     string
	field    string
}{
	// Claude Code attaching a PDF.
	{"document block", Anthropic, OpenAIChat,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"sum up"},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}}]}]}`,
		"messages[0].content[1]"},
	{"document in a tool result", Anthropic, OpenAIResponses,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]}]}`,
		"messages[0].content[0].content[0]"},
	{"server tool", Anthropic, OpenAIChat,
		`{"model":"c","max_tokens":5,` + msgs + `,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`,
		"tools[0]"},
	{"anthropic-defined client tool", Anthropic, OpenAIResponses,
		`{"model":"c","max_tokens":5,` + msgs + `,"tools":[{"type":"bash_20250124","name":"bash"}]}`,
		"tools[0]"},
	{"server tool result in history", Anthropic, OpenAIChat,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}]}]}`,
		"messages[1].content[0]"},
	{"image by file id", Anthropic, OpenAIChat,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_011"}}]}]}`,
		"messages[0].content[0].source"},
	{"mcp servers", Anthropic, OpenAIChat,
		`{"model":"c","max_tokens":5,` + msgs + `,"mcp_servers":[{"type":"url","url":"https://x","name":"x"}]}`,
		"mcp_servers"},
	{"structured output", Anthropic, OpenAIResponses,
		`{"model":"c","max_tokens":5,` + msgs + `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`,
		"output_config.format"},
	// The Responses API has no stop parameter at all.
	{"stop sequences to responses", Anthropic, OpenAIResponses,
		`{"model":"c","max_tokens":5,` + msgs + `,"stop_sequences":["END"]}`,
		"stop_sequences"},
	{"five stop sequences to chat", Anthropic, OpenAIChat,
		`{"model":"c","max_tokens":5,` + msgs + `,"stop_sequences":["a","b","c","d","e"]}`,
		"stop_sequences"},

	{"several choices", OpenAIChat, Anthropic,
		`{"model":"g",` + msgs + `,"n":2}`, "n"},
	{"json schema output", OpenAIChat, Anthropic,
		`{"model":"g",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`, "response_format"},
	{"audio input", OpenAIChat, Anthropic,
		`{"model":"g","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}}]}]}`,
		"messages[0].content[0]"},
	{"file input", OpenAIChat, Anthropic,
		`{"model":"g","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`,
		"messages[0].content[0]"},
	{"legacy functions", OpenAIChat, Anthropic,
		`{"model":"g",` + msgs + `,"functions":[{"name":"f","parameters":{}}]}`, "functions"},
	{"custom tool", OpenAIChat, Anthropic,
		`{"model":"g",` + msgs + `,"tools":[{"type":"custom","custom":{"name":"apply_patch"}}]}`, "tools[0]"},
	{"arguments that are not an object", OpenAIChat, Anthropic,
		`{"model":"g","messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"[1,2]"}}]},{"role":"tool","tool_call_id":"call_1","content":"x"}]}`,
		"tool call call_1"},
	{"logprobs", OpenAIChat, Anthropic,
		`{"model":"g",` + msgs + `,"logprobs":true}`, "logprobs"},

	// Codex threads that live at OpenAI.
	{"previous response", OpenAIResponses, Anthropic,
		`{"model":"g","input":"next","previous_response_id":"resp_1"}`, "previous_response_id"},
	{"item reference", OpenAIResponses, Anthropic,
		`{"model":"g","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0]"},
	{"hosted tool", OpenAIResponses, Anthropic,
		`{"model":"g","input":"q","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, "tools[0]"},
	{"a namespace's hosted tool", OpenAIResponses, OpenAIChat,
		`{"model":"g","input":"q","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"},{"type":"custom","name":"g"}]}]}`, "tools[0].tools[1]"},
	// Codex's freeform apply_patch and local_shell tools.
	{"freeform tool", OpenAIResponses, Anthropic,
		`{"model":"g","input":"q","tools":[{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}]}`, "tools[0]"},
	{"local shell call in history", OpenAIResponses, Anthropic,
		`{"model":"g","input":[{"type":"local_shell_call","call_id":"c","action":{"type":"exec","command":["ls"]}}]}`, "input[0]"},
	{"image by file id", OpenAIResponses, Anthropic,
		`{"model":"g","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "input[0].content[0]"},
	{"input file", OpenAIResponses, Anthropic,
		`{"model":"g","input":[{"role":"user","content":[{"type":"input_file","file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}]}]}`, "input[0].content[0]"},
	{"json output", OpenAIResponses, Anthropic,
		`{"model":"g","input":"q","text":{"format":{"type":"json_schema","name":"x","schema":{}}}}`, "text.format"},

	// Gemini CLI and other Gemini clients.
	{"file uploaded to google", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"sum up"},{"fileData":{"mimeType":"application/pdf","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}]}`,
		"contents[0].parts[1].fileData"},
	{"pdf inline", Gemini, OpenAIChat,
		`{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0x"}}]}]}`,
		"contents[0].parts[0].inlineData"},
	{"google search tool", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"news?"}]}],"tools":[{"googleSearch":{}}]}`, "tools[0].googleSearch"},
	{"code execution in history", Gemini, OpenAIResponses,
		`{"contents":[{"role":"user","parts":[{"text":"2+2"}]},{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(2+2)"}}]},{"role":"user","parts":[{"text":"ok"}]}]}`,
		"contents[1].parts[0]"},
	{"cached content", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"cachedContent":"cachedContents/abc"}`, "cachedContent"},
	// Gemini CLI's own JSON helpers (next speaker, loop detection).
	{"json schema output", GeminiCodeAssist, Anthropic,
		`{"model":"gemini-2.5-flash","request":{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}}}`,
		"generationConfig.responseMimeType"},
	{"response schema", Gemini, OpenAIChat,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`,
		"generationConfig.responseSchema"},
	{"two candidates", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"candidateCount":2}}`, "generationConfig.candidateCount"},
	{"speech", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"speechConfig":{"voiceConfig":{}}}}`, "generationConfig.speechConfig"},
	{"several allowed functions", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"},{"name":"c"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["a","b"]}}}`,
		"toolConfig.functionCallingConfig.allowedFunctionNames"},
	{"model turn last", Gemini, Anthropic,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"The answer is"}]}]}`, "contents[1]"},
	{"image by url to gemini", Anthropic, Gemini,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`,
		"image https://example.com/a.png"},
	{"document to gemini", Anthropic, GeminiCodeAssist,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}}]}]}`,
		"messages[0].content[0]"},
	{"six stop sequences to gemini", Anthropic, Gemini,
		`{"model":"c","max_tokens":5,` + msgs + `,"stop_sequences":["a","b","c","d","e","f"]}`, "stop_sequences"},
	{"structured output to gemini", OpenAIChat, Gemini,
		`{"model":"g",` + msgs + `,"response_format":{"type":"json_object"}}`, "response_format"},

	// Between the two OpenAI wires.
	{"stop sequences to responses from chat", OpenAIChat, OpenAIResponses,
		`{"model":"m",` + msgs + `,"stop":["END"]}`, "stop"},
	{"stored turns to chat", OpenAIResponses, OpenAIChat,
		`{"model":"m","input":"q","previous_response_id":"resp_1"}`, "previous_response_id"},
	{"Codex's free-form tool to chat", OpenAIResponses, OpenAIChat,
		`{"model":"m","input":"q","tools":[{"type":"custom","name":"apply_patch"}]}`, "tools[0]"},
	{"audio in to responses", OpenAIChat, OpenAIResponses,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}}]}]}`,
		"messages[0].content[0]"},
	{"a stored conversation on a ChatGPT login", OpenAIResponses, ChatGPTCodex,
		`{"model":"m","input":"q","conversation":"conv_1"}`, "conversation"},
}

// Each row is something a real client can send that the other wire
// cannot carry without changing the request's meaning. The translation
// must refuse it with an *UnsupportedError naming the field, never drop
// it.
func TestUnsupportedIsRefused(t *testing.T) {
	tests := unsupportedTests
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Request(tc.from, tc.to, []byte(tc.body), "target-model")
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("want *UnsupportedError, got %v\n%s", err, out)
			}
			if ue.Field != tc.field || ue.From != tc.from || ue.To != tc.to || ue.Reason == "" {
				t.Errorf("error %+v, want field %q", ue, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message %q does not name the field", err)
			}
		})
	}
}

// Optimisations are dropped without a word; sampling tweaks with a note;
// a malformed body is an error but not an UnsupportedError (the request
// is broken, not untranslatable).
func TestDropsAndMalformed(t *testing.T) {
	body := `{"model":"c","max_tokens":5,"service_tier":"auto","top_k":3,"brand_new_field":1,
		"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	out, notes, err := RequestWithNotes(Anthropic, OpenAIChat, []byte(body), "gpt-4.1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "cache_control") || strings.Contains(string(out), "top_k") || strings.Contains(string(out), "brand_new") {
		t.Errorf("dropped fields leaked: %s", out)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"top_k:", "brand_new_field: unknown field dropped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	for _, silent := range []string{"service_tier", "cache_control"} {
		if strings.Contains(joined, silent) {
			t.Errorf("optimisation %s was noted: %q", silent, notes)
		}
	}

	for _, bad := range []struct {
		from Target
		body string
	}{
		{Anthropic, `{"messages":"nope"}`},
		{Anthropic, `{"model":"c","max_tokens":5,"messages":[{"role":"tool","content":"x"}]}`},
		{OpenAIChat, `[1,2]`},
		{OpenAIResponses, `{"input":[{"type":"message","role":"wizard","content":"x"}]}`},
	} {
		to := Anthropic
		if bad.from == Anthropic {
			to = OpenAIChat
		}
		_, err := Request(bad.from, to, []byte(bad.body), "m")
		var ue *UnsupportedError
		if err == nil || errors.As(err, &ue) {
			t.Errorf("%s %s: want a plain error, got %v", bad.from, bad.body, err)
		}
	}

	if _, err := Request(OpenAIChat, "openai-assistants", []byte(`{}`), "m"); err == nil {
		t.Error("an unknown target is not offered and must say so")
	}
}

func TestSameWireSetsModelOnly(t *testing.T) {
	out, err := Request(Anthropic, Anthropic, []byte(`{"model":"a","max_tokens":5,"messages":[]}`), "b")
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJSON(t, out)
	if m["model"] != "b" || m["max_tokens"] != float64(5) {
		t.Errorf("%s", out)
	}
}

// A final assistant turn means "continue this" to Claude and "reply after
// this" to OpenAI: neither direction can carry it faithfully.
func TestTrailingAssistantTurnIsRefused(t *testing.T) {
	tests := []struct {
		from, to Target
		body     string
		field    string
	}{
		{Anthropic, OpenAIChat, `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Say a colour"},{"role":"assistant","content":"The colour is"}]}`, "messages[1]"},
		{OpenAIChat, Anthropic, `{"model":"g","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`, "messages[1]"},
		{OpenAIResponses, Anthropic, `{"model":"g","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`, "input"},
	}
	for _, tc := range tests {
		_, err := Request(tc.from, tc.to, []byte(tc.body), "m")
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Field != tc.field {
			t.Errorf("%s: got %v, want refusal of %s", tc.from, err, tc.field)
		}
	}
}

func TestEmptySystemIsNotSent(t *testing.T) {
	out, err := Request(OpenAIChat, Anthropic, []byte(`{"model":"g","messages":[{"role":"system","content":""},{"role":"user","content":"hi"}]}`), "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeJSON(t, out)["system"]; ok {
		t.Errorf("empty system prompt sent: %s", out)
	}
}

// Claude Code sends system messages inside the conversation to a model it
// does not know (an alias of the person's): carried as user text, in
// place, to both OpenAI wires (issue 24: the translation refused them, and
// an alias list could not move on to OpenAI).
func TestMidConversationSystemIsUserText(t *testing.T) {
	body := `{"model":"pool-best","max_tokens":50,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}]},{"role":"system","content":[{"type":"text","text":"<system-reminder>files changed</system-reminder>"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.go"}]}]}`
	for _, to := range []Target{OpenAIChat, OpenAIResponses, ChatGPTCodex} {
		out, notes, err := RequestWithNotes(Anthropic, to, []byte(body), "gpt-5.1")
		if err != nil {
			t.Fatalf("%s: %v", to, err)
		}
		s := string(out)
		res, rem := strings.Index(s, "a.go"), strings.Index(s, "files changed")
		if res < 0 || rem < 0 || rem < res {
			t.Errorf("%s: %s: want the tool result, then the reminder as user text", to, out)
		}
		if !strings.Contains(strings.Join(notes, "; "), "messages[2]: a system message inside the conversation") {
			t.Errorf("%s: notes %q", to, notes)
		}
	}
}
