package translate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestSupportedPairs(t *testing.T) {
	all := []Target{Anthropic, OpenAIChat, OpenAIResponses, ChatGPTCodex, Gemini, GeminiCodeAssist}
	for _, from := range all {
		for _, to := range all {
			// Every pair is offered, Chat ⇄ Responses included.
			if got := Supported(from, to); !got {
				t.Errorf("Supported(%s, %s) = %v", from, to, got)
			}
		}
	}
	if Supported("gemini-vertex", Anthropic) {
		t.Error("an unknown target is supported")
	}
}

// canonical decodes JSON so that two bodies with the same meaning
// compare equal whatever their spacing and field order.
func canonical(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}

// A Claude Code conversation goes to Gemini and comes back as it was:
// the same turns, blocks, tool ids, results (errors and images
// included), tools and sampling. What does not come back is what the
// translation drops on purpose (cache_control, metadata).
func TestGeminiRoundTripKeepsMeaning(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	img := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}`
	body := `{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"temperature":0.4,"top_k":40,
		"stop_sequences":["</answer>"],"metadata":{"user_id":"u-1"},
		"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be brief."}],
		"tools":[{"name":"Read","description":"Reads a file.","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}},
		         {"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],
		"tool_choice":{"type":"any"},
		"messages":[
		 {"role":"user","content":[{"type":"text","text":"Look at these."},` + img + `]},
		 {"role":"assistant","content":[{"type":"text","text":"Reading."},
		   {"type":"tool_use","id":"toolu_01A","name":"Read","input":{"file_path":"/a.png"}},
		   {"type":"tool_use","id":"toolu_01B","name":"Bash","input":{"command":"ls /nope"}},
		   {"type":"tool_use","id":"toolu_01C","name":"Read","input":{"file_path":"/b.txt"}}]},
		 {"role":"user","content":[
		   {"type":"tool_result","tool_use_id":"toolu_01A","content":[{"type":"text","text":"an image:"},` + img + `]},
		   {"type":"tool_result","tool_use_id":"toolu_01B","is_error":true,"content":"ls: /nope: No such file"},
		   {"type":"tool_result","tool_use_id":"toolu_01C","content":"hello"},
		   {"type":"text","text":"And now?"}]}]}`
	var orig aRequest
	if err := json.Unmarshal([]byte(body), &orig); err != nil {
		t.Fatal(err)
	}
	for _, to := range []Target{Gemini, GeminiCodeAssist} {
		t.Run(string(to), func(t *testing.T) {
			up, err := Request(Anthropic, to, []byte(body), "gemini-3-pro-preview")
			if err != nil {
				t.Fatal(err)
			}
			back, _, err := RequestWithOptions(to, Anthropic, up, "claude-sonnet-4-5", RequestOptions{Stream: true})
			if err != nil {
				t.Fatalf("%v\n%s", err, up)
			}
			var got aRequest
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Messages) != len(orig.Messages) {
				t.Fatalf("%d messages back, want %d:\n%s", len(got.Messages), len(orig.Messages), back)
			}
			for i := range orig.Messages {
				// cache_control is the one thing dropped from the blocks.
				want := strings.ReplaceAll(string(orig.Messages[i].Content), `,"cache_control":{"type":"ephemeral"}`, "")
				if !reflect.DeepEqual(canonical(t, got.Messages[i].Content), canonical(t, json.RawMessage(want))) || got.Messages[i].Role != orig.Messages[i].Role {
					t.Errorf("message %d changed:\n got  %s\n want %s", i, got.Messages[i].Content, want)
				}
			}
			if !reflect.DeepEqual(canonical(t, got.System), canonical(t, json.RawMessage(`[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Be brief."}]`))) {
				t.Errorf("system %s", got.System)
			}
			if len(got.Tools) != 2 || got.Tools[0].Name != "Read" || got.Tools[0].Description != "Reads a file." ||
				!reflect.DeepEqual(canonical(t, got.Tools[1].InputSchema), canonical(t, orig.Tools[1].InputSchema)) {
				t.Errorf("tools %+v", got.Tools)
			}
			if got.ToolChoice == nil || got.ToolChoice.Type != "any" || got.MaxTokens != 4096 || !got.Stream ||
				*got.Temperature != 0.4 || *got.TopK != 40 || !reflect.DeepEqual(got.StopSequences, orig.StopSequences) {
				t.Errorf("settings changed: %s", back)
			}
		})
	}
}

// Gemini CLI served by Claude: the answer's tool ids reach the CLI as
// function call ids, and whatever the CLI then does with them (it
// prefixes them with the function's name when it manages its context)
// comes back as a tool_use and tool_result pair Claude accepts.
func TestGeminiClientKeepsToolIDs(t *testing.T) {
	const tools = `"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object","properties":{"absolute_path":{"type":"string"}}}}]}]`
	const answer = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		"content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"read_file","input":{"absolute_path":"/a"}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`
	const stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"read_file\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"absolute_path\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"/a\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	const want = "toolu_01T1x1fJ34qAmk2tNTrN7Up6"

	out, err := Response(Anthropic, Gemini, []byte(answer), "gemini-2.5-pro")
	if err != nil {
		t.Fatal(err)
	}
	var r gResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	fc := r.Candidates[0].Content.Parts[1].FunctionCall
	if fc == nil || fc.ID != want || r.Candidates[0].FinishReason != "STOP" {
		t.Fatalf("answer %s", out)
	}
	var sse bytes.Buffer
	if err := Stream(&sse, strings.NewReader(stream), Anthropic, Gemini, "gemini-2.5-pro"); err != nil {
		t.Fatal(err)
	}
	if evs := validate(t, Gemini, sse.Bytes()); !bytes.Contains(evs[0].data, []byte(`"id":"`+want+`","name":"read_file","args":{"absolute_path":"/a"}`)) {
		t.Fatalf("streamed call %s", evs[0].data)
	}

	for _, cliID := range []string{want, "read_file__" + want} {
		next := `{"contents":[{"role":"user","parts":[{"text":"read /a"}]},
			{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"` + cliID + `","name":"read_file","args":{"absolute_path":"/a"}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"` + cliID + `","name":"read_file","response":{"output":"A"}}}]}],` + tools + `}`
		use, result := anthropicPair(t, Gemini, next)
		if use != cliID || result != cliID || !anthropicID.MatchString(use) {
			t.Errorf("tool_use %q and tool_result %q, want both %q", use, result, cliID)
		}
	}
}

// anthropicPair translates a Gemini request with one call and its
// response and returns the ids of the tool_use and tool_result.
func anthropicPair(t *testing.T, from Target, body string) (use, result string) {
	t.Helper()
	out, err := Request(from, Anthropic, []byte(body), "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range list(decodeJSON(t, out)["messages"]) {
		for _, b := range list(msg.(jmap)["content"]) {
			switch bm := b.(jmap); bm["type"] {
			case "tool_use":
				use = jstr(bm, "id")
			case "tool_result":
				result = jstr(bm, "tool_use_id")
			}
		}
	}
	return use, result
}

// History a real Gemini wrote has calls without ids, and Gemini CLI
// answers them with ids it made up. The translation pairs them by name
// and order, and gives each call an id that stays the same as the
// conversation grows, so every turn sends Claude the same history.
func TestGeminiCallsWithoutIDsPairByNameAndOrder(t *testing.T) {
	turn := `{"role":"user","parts":[{"text":"read a and b"}]},
		{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"p":"a"}}},{"functionCall":{"name":"read_file","args":{"p":"b"}}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"read_file_1772366400000_0","name":"read_file","response":{"output":"A"}}},
		                        {"functionResponse":{"id":"read_file_1772366400000_1","name":"read_file","response":{"output":"B"}}}]}`
	later := turn + `,{"role":"model","parts":[{"text":"A and B."}]},{"role":"user","parts":[{"text":"thanks"}]}`
	ids := func(contents string) (calls map[string]string, results map[string]string) {
		out, err := Request(Gemini, Anthropic, []byte(`{"contents":[`+contents+`]}`), "claude-sonnet-4-5")
		if err != nil {
			t.Fatal(err)
		}
		calls, results = map[string]string{}, map[string]string{}
		for _, msg := range list(decodeJSON(t, out)["messages"]) {
			for _, b := range list(msg.(jmap)["content"]) {
				switch bm := b.(jmap); bm["type"] {
				case "tool_use":
					calls[jstr(bm, "input", "p")] = jstr(bm, "id")
				case "tool_result":
					results[jstr(bm, "content")] = jstr(bm, "tool_use_id")
				}
			}
		}
		return calls, results
	}
	calls, results := ids(turn)
	if calls["a"] == "" || calls["a"] == calls["b"] || !anthropicID.MatchString(calls["a"]) || !anthropicID.MatchString(calls["b"]) {
		t.Fatalf("call ids %v", calls)
	}
	if results["A"] != calls["a"] || results["B"] != calls["b"] {
		t.Errorf("results %v do not answer calls %v in order", results, calls)
	}
	laterCalls, _ := ids(later)
	if !reflect.DeepEqual(laterCalls, calls) {
		t.Errorf("ids changed as the conversation grew: %v, then %v", calls, laterCalls)
	}
}

// Claude Code served by Gemini: a Gemini call has no id, so the
// translation derives one, the same from a JSON answer and from the same
// answer streamed; Claude Code's next turn names it, and the Gemini
// request carries it on the call and the response, with the function's
// name the response needs and the signature Gemini 3 asks for.
func TestClaudeCodeOnGeminiKeepsToolIDs(t *testing.T) {
	const part = `{"functionCall":{"name":"read_file","args":{"absolute_path":"/repo/a.go"}},"thoughtSignature":"CsUBAdHt"}`
	jsonAnswer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Reading."},` + part + `]},"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"responseId":"resp-77"}`
	stream := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Reading."}]},"index":0}],"responseId":"resp-77"}` + "\n\n" +
		`data: {"candidates":[{"content":{"role":"model","parts":[` + part + `]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"responseId":"resp-77"}` + "\n\n"

	out, err := Response(Gemini, Anthropic, []byte(jsonAnswer), "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	id, name, args := toolCallOf(t, Anthropic, out, false)
	collected, err := Collect(Gemini, Anthropic, strings.NewReader(stream), "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	var sse bytes.Buffer
	if err := Stream(&sse, strings.NewReader(stream), Gemini, Anthropic, "claude-sonnet-4-5"); err != nil {
		t.Fatal(err)
	}
	cid, _, _ := toolCallOf(t, Anthropic, collected, false)
	sid, _, _ := toolCallOf(t, Anthropic, sse.Bytes(), true)
	if !anthropicID.MatchString(id) || name != "read_file" || cid != id || sid != id {
		t.Fatalf("ids %q (JSON), %q (collected), %q (streamed), name %q", id, cid, sid, name)
	}

	next := `{"model":"claude-sonnet-4-5","max_tokens":1024,
		"tools":[{"name":"read_file","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"read a.go"},
		{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"` + id + `","name":"read_file","input":` + args + `}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"package a"}]}]}`
	up, err := Request(Anthropic, Gemini, []byte(next), "gemini-3-pro-preview")
	if err != nil {
		t.Fatal(err)
	}
	var req gRequest
	if err := json.Unmarshal(up, &req); err != nil {
		t.Fatal(err)
	}
	call := req.Contents[1].Parts[1]
	resp := req.Contents[2].Parts[0].FunctionResponse
	if call.FunctionCall == nil || call.FunctionCall.ID != id || call.ThoughtSignature != skipSignature ||
		resp == nil || resp.ID != id || resp.Name != "read_file" || string(resp.Response) != `{"output":"package a"}` {
		t.Errorf("request %s", up)
	}
}

// A result whose call the conversation does not hold cannot name its
// function, which Gemini requires; a Gemini response to no call cannot be
// paired for the others.
func TestGeminiOrphanResultsAreRefused(t *testing.T) {
	chat := `{"model":"g","messages":[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"call_gone","content":"x"},{"role":"user","content":"and?"}]}`
	if _, err := Request(OpenAIChat, Gemini, []byte(chat), "gemini-2.5-pro"); !isUnsupported(err, "tool result call_gone") {
		t.Errorf("chat: %v", err)
	}
	gem := `{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}},{"functionResponse":{"name":"a","response":{}}}]}]}`
	if _, err := Request(Gemini, Anthropic, []byte(gem), "claude-sonnet-4-5"); !isUnsupported(err, "contents[2].parts[1]") {
		t.Errorf("gemini: %v", err)
	}
}

func TestCodeAssistEnvelope(t *testing.T) {
	inner := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":1},"session_id":"s-1","labels":{"a":"b"}}`
	env := `{"model":"gemini-2.5-pro","project":"proj-1","user_prompt_id":"p-1","request":` + inner + `,"enabled_credit_types":["G1"]}`

	ca, err := ReadCodeAssist([]byte(env))
	if err != nil || ca != (CodeAssist{Model: "gemini-2.5-pro", Project: "proj-1", UserPromptID: "p-1"}) {
		t.Fatalf("ReadCodeAssist: %+v %v", ca, err)
	}

	// The credential's project replaces the client's; what is not set
	// stays, the credit types included.
	set, err := SetCodeAssist([]byte(env), CodeAssist{Project: "proj-2"})
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJSON(t, set)
	if m["project"] != "proj-2" || m["model"] != "gemini-2.5-pro" || m["user_prompt_id"] != "p-1" || m["enabled_credit_types"] == nil {
		t.Errorf("SetCodeAssist: %s", set)
	}

	req, ca, err := UnwrapCodeAssist([]byte(env))
	if err != nil || ca.Project != "proj-1" {
		t.Fatal(err)
	}
	if m := decodeJSON(t, req); m["session_id"] != nil || m["labels"] != nil || m["contents"] == nil || m["generationConfig"] == nil {
		t.Errorf("UnwrapCodeAssist kept what the Gemini API refuses: %s", req)
	}

	wrapped, err := WrapCodeAssist(req, CodeAssist{Model: "gemini-3-pro-preview", Project: "proj-3"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadCodeAssist(wrapped)
	if err != nil || got.Model != "gemini-3-pro-preview" || got.Project != "proj-3" || !strings.HasPrefix(got.UserPromptID, "subpool-") {
		t.Errorf("WrapCodeAssist: %s", wrapped)
	}
	// The derived prompt id holds through a tool loop and changes with
	// the next prompt.
	loop := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`
	nextPrompt := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hello"}]},{"role":"user","parts":[{"text":"more"}]}]}`
	a, _ := WrapCodeAssist([]byte(loop), CodeAssist{Model: "m"})
	b, _ := WrapCodeAssist([]byte(nextPrompt), CodeAssist{Model: "m"})
	pa, _ := ReadCodeAssist(a)
	pb, _ := ReadCodeAssist(b)
	if pa.UserPromptID != got.UserPromptID || pb.UserPromptID == got.UserPromptID {
		t.Errorf("prompt ids %q (first), %q (same prompt, tool loop), %q (next prompt)", got.UserPromptID, pa.UserPromptID, pb.UserPromptID)
	}

	for _, bad := range []string{`[]`, `{"model":"m"}`, `{"model":"m","request":"x"}`} {
		if _, _, err := UnwrapCodeAssist([]byte(bad)); err == nil {
			t.Errorf("UnwrapCodeAssist(%s) accepted", bad)
		}
	}

	answer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}]}`
	unwrapped, err := UnwrapCodeAssistResponse([]byte(`{"response":` + answer + `,"traceId":"tr-1"}`))
	if err != nil || decodeJSON(t, unwrapped)["responseId"] != "tr-1" {
		t.Errorf("UnwrapCodeAssistResponse: %s %v", unwrapped, err)
	}
	rewrapped, err := WrapCodeAssistResponse(unwrapped)
	if err != nil || jstr(decodeJSON(t, rewrapped), "traceId") != "tr-1" || jstr(decodeJSON(t, rewrapped), "response", "responseId") != "tr-1" {
		t.Errorf("WrapCodeAssistResponse: %s %v", rewrapped, err)
	}
	if _, err := UnwrapCodeAssistResponse([]byte(`{"traceId":"x"}`)); err == nil {
		t.Error("an answer without response was unwrapped")
	}
}

func TestGeminiPaths(t *testing.T) {
	if p := geminiPath("gemini-2.5-pro", false); p != "/v1beta/models/gemini-2.5-pro:generateContent" {
		t.Error(p)
	}
	if p := geminiPath("models/gemini-2.5-flash", true); p != "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse" {
		t.Error(p)
	}
	if codeAssistPath(false) != "/v1internal:generateContent" || codeAssistPath(true) != "/v1internal:streamGenerateContent?alt=sse" {
		t.Error(codeAssistPath(false), codeAssistPath(true))
	}
	// What the sim tests ask, ParseGeminiPath reads (the query is not
	// the path's).
	p, _, _ := strings.Cut(geminiPath("gemini-2.5-pro", true), "?")
	if c, ok := ParseGeminiPath(p); c.Model != "gemini-2.5-pro" || c.Method != GeminiStream || !ok {
		t.Error(c, ok)
	}
}

func TestParseGeminiPaths(t *testing.T) {
	cases := []struct {
		path string
		ok   bool
		want GeminiCall
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent", true, GeminiCall{Method: GeminiGenerate, Model: "gemini-2.5-pro", Version: "v1beta"}},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", true, GeminiCall{Method: GeminiStream, Model: "gemini-2.5-flash", Version: "v1beta"}},
		{"/v1beta/models/gemini-2.5-flash:countTokens", true, GeminiCall{Method: GeminiCount, Model: "gemini-2.5-flash", Version: "v1beta"}},
		{"/v1beta/models", true, GeminiCall{List: true, Version: "v1beta"}},
		// GOOGLE_GENAI_API_VERSION's other values (issue 44).
		{"/v1/models/gemini-2.5-pro:generateContent", true, GeminiCall{Method: GeminiGenerate, Model: "gemini-2.5-pro", Version: "v1"}},
		{"/v1alpha/models/gemini-2.5-pro:streamGenerateContent", true, GeminiCall{Method: GeminiStream, Model: "gemini-2.5-pro", Version: "v1alpha"}},
		{"/v1alpha/models", true, GeminiCall{List: true, Version: "v1alpha"}},
		{"/v1/models", false, GeminiCall{}}, // the OpenAI list
		{"/v2/models/gemini-2.5-pro:generateContent", false, GeminiCall{}},
		// A model no Gemini model is like is routed, and refused with
		// its reason when served (the proxy's geminiModelRefused).
		{"/v1beta/models/a/b:generateContent", true, GeminiCall{Method: GeminiGenerate, Model: "a/b", Version: "v1beta"}},
		{"/v1beta/models/x?a=1:generateContent", true, GeminiCall{Method: GeminiGenerate, Model: "x?a=1", Version: "v1beta"}},
		{"/v1internal:loadCodeAssist", true, GeminiCall{CodeAssist: true, Method: "loadCodeAssist"}},
		{"/v1internal:streamGenerateContent", true, GeminiCall{CodeAssist: true, Method: GeminiStream}},
		{"/v1internal/operations/abc123", true, GeminiCall{CodeAssist: true, Op: "operations/abc123"}},
		{"/v1beta/models/gemini-2.5-pro:embedContent", false, GeminiCall{}},
		{"/v1beta/models/:generateContent", false, GeminiCall{}},
		{"/v1beta/tunedModels", false, GeminiCall{}},
		{"/v1internal:load/../x", false, GeminiCall{}},
		{"/v1internal/../v1beta", false, GeminiCall{}},
	}
	for _, c := range cases {
		got, ok := ParseGeminiPath(c.path)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseGeminiPath(%q) = %+v, %v; want %+v, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

// Between a key's client and a login's upstream, or back, a stream
// passes with the envelope changed, errors in the form each client reads.
func TestGeminiStreamEnvelopePassThrough(t *testing.T) {
	src := readFile(t, "testdata/streams/gemini_tools.sse")
	var ca bytes.Buffer
	if err := Stream(&ca, bytes.NewReader(src), Gemini, GeminiCodeAssist, "gemini-2.5-pro"); err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	if err := Stream(&back, bytes.NewReader(ca.Bytes()), GeminiCodeAssist, Gemini, "gemini-2.5-pro"); err != nil {
		t.Fatal(err)
	}
	orig, wrapped, unwrapped := parseSSE(t, src), parseSSE(t, ca.Bytes()), parseSSE(t, back.Bytes())
	if len(wrapped) != len(orig) || len(unwrapped) != len(orig) {
		t.Fatalf("%d events, %d wrapped, %d unwrapped", len(orig), len(wrapped), len(unwrapped))
	}
	for i := range orig {
		env := decodeJSON(t, wrapped[i].data)
		if len(env) != 2 || env["traceId"] != "xLdOaJ2ZHoSk1dkPt9KZ0Ak" ||
			!reflect.DeepEqual(env["response"], canonical(t, orig[i].data)) ||
			!reflect.DeepEqual(canonical(t, unwrapped[i].data), canonical(t, orig[i].data)) {
			t.Errorf("event %d: %s\nwrapped %s\nunwrapped %s", i, orig[i].data, wrapped[i].data, unwrapped[i].data)
		}
	}

	var errOut bytes.Buffer
	if err := Stream(&errOut, bytes.NewReader(readFile(t, "testdata/streams/gemini_overloaded.sse")), Gemini, GeminiCodeAssist, "m"); err != nil {
		t.Fatal(err)
	}
	evs := validate(t, GeminiCodeAssist, errOut.Bytes())
	if !bytes.Contains(evs[len(evs)-1].data, []byte(`"status":"UNAVAILABLE"`)) {
		t.Errorf("%s", errOut.Bytes())
	}

	// JSON answers and requests likewise.
	body := readFile(t, "testdata/responses/code_assist_text.json")
	plain, err := Response(GeminiCodeAssist, Gemini, body, "m")
	if err != nil || decodeJSON(t, plain)["responseId"] != "e7b2c1f0a9d84d3c" {
		t.Errorf("%s %v", plain, err)
	}
	if again, err := Response(Gemini, GeminiCodeAssist, plain, "m"); err != nil || jstr(decodeJSON(t, again), "traceId") != "e7b2c1f0a9d84d3c" {
		t.Errorf("%s %v", again, err)
	}
}

// Gemini ends an answer it could not form with a finishReason Gemini CLI
// retries; a client of another wire gets an error, not an empty answer.
func TestGeminiMalformedCallIsAnError(t *testing.T) {
	body := `{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL","index":0}],"responseId":"r"}`
	if _, err := Response(Gemini, Anthropic, []byte(body), "m"); err == nil {
		t.Error("a malformed call became an answer")
	}
	var out bytes.Buffer
	if err := Stream(&out, strings.NewReader("data: "+body+"\n\n"), Gemini, Anthropic, "m"); err != nil {
		t.Fatal(err)
	}
	evs := validate(t, Anthropic, out.Bytes())
	if last := evs[len(evs)-1]; last.name != "error" || !bytes.Contains(last.data, []byte("MALFORMED_FUNCTION_CALL")) {
		t.Errorf("%s", out.Bytes())
	}
}

// Thinking reaches a Gemini client as thought parts, from a stream or a
// collected one; it reaches no other client.
func TestThoughtsOnlyForGeminiClients(t *testing.T) {
	src := readFile(t, "testdata/streams/anthropic_tool_use.sse")
	for _, to := range []Target{Gemini, OpenAIChat, OpenAIResponses} {
		var out bytes.Buffer
		if err := Stream(&out, bytes.NewReader(src), Anthropic, to, "m"); err != nil {
			t.Fatal(err)
		}
		if shown := bytes.Contains(out.Bytes(), []byte("I should list files.")); shown != (to == Gemini) {
			t.Errorf("%s: thinking shown %v", to, shown)
		}
	}
	gsrc := readFile(t, "testdata/streams/gemini_text.sse")
	for _, to := range []Target{Anthropic, OpenAIChat, OpenAIResponses} {
		out, err := Collect(Gemini, to, bytes.NewReader(gsrc), "m")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("Greeting the user")) || !bytes.Contains(out, []byte("Hello <there> & welcome!")) {
			t.Errorf("%s: %s", to, out)
		}
	}
}

func isUnsupported(err error, field string) bool {
	ue, ok := err.(*UnsupportedError)
	return ok && ue.Field == field
}
