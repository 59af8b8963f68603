package translate

import (
	"bytes"
	"encoding/json"
	"testing"
)

func decodeJSON(t *testing.T, b []byte) jmap {
	t.Helper()
	var m jmap
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return m
}

func list(v any) []any { l, _ := v.([]any); return l }

// A Claude Code conversation detours through an OpenAI upstream and
// comes back: the tool ids the client sees must be the ones its next
// turn's tool results name, and those must match the calls in the
// translated history, whichever provider serves that next turn.
func TestRoundTripKeepsToolIDs(t *testing.T) {
	const turn1 = `{"model":"claude-sonnet-4-5","max_tokens":1024,
		"tools":[{"name":"Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],
		"messages":[{"role":"user","content":"read a and b"}]}`

	for _, up := range []struct {
		wire   Target
		answer string // the upstream's answer to turn 1: two calls, one with a foreign id
	}{
		{OpenAIChat, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_abc123","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"a\"}"}},
			{"id":"functions.Read:1","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"b\"}"}}]},"finish_reason":"tool_calls"}],
			"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`},
		{OpenAIResponses, `{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","output":[
			{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_abc123","name":"Read","arguments":"{\"file_path\":\"a\"}"},
			{"id":"fc_2","type":"function_call","status":"completed","call_id":"functions.Read:1","name":"Read","arguments":"{\"file_path\":\"b\"}"}],
			"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}`},
	} {
		t.Run(string(up.wire), func(t *testing.T) {
			if _, err := Request(Anthropic, up.wire, []byte(turn1), "gpt-5"); err != nil {
				t.Fatal(err)
			}
			back, err := Response(up.wire, Anthropic, []byte(up.answer), "claude-sonnet-4-5")
			if err != nil {
				t.Fatal(err)
			}
			msg := decodeJSON(t, back)
			content := list(msg["content"])
			if len(content) != 2 {
				t.Fatalf("content %v", content)
			}
			id0 := jstr(content[0].(jmap), "id")
			id1 := jstr(content[1].(jmap), "id")
			if id0 != "call_abc123" {
				t.Errorf("an id both wires accept changed: %q", id0)
			}
			if !anthropicID.MatchString(id1) || id1 == id0 {
				t.Errorf("foreign id became %q, not a distinct valid Anthropic id", id1)
			}

			// Turn 2: Claude Code sends the calls back with their results.
			assistant, _ := json.Marshal(content)
			turn2 := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,
				"tools":[{"name":"Read","input_schema":{"type":"object"}}],
				"messages":[{"role":"user","content":"read a and b"},
				{"role":"assistant","content":` + string(assistant) + `},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id0 + `","content":"A"},
				                          {"type":"tool_result","tool_use_id":"` + id1 + `","content":"B"}]}]}`)

			// Served by the OpenAI upstream again: calls and results pair up,
			// and the id the upstream minted is the one it gets back.
			req, err := Request(Anthropic, up.wire, turn2, "gpt-5")
			if err != nil {
				t.Fatal(err)
			}
			calls, results := openAIToolIDs(t, up.wire, req)
			if len(calls) != 2 || calls[0] != results[0] || calls[1] != results[1] {
				t.Errorf("calls %v and results %v do not pair up", calls, results)
			}
			if calls[0] != "call_abc123" {
				t.Errorf("upstream id came back as %q", calls[0])
			}
			if len(calls[1]) > maxChatIDLen {
				t.Errorf("id %q too long for Chat Completions", calls[1])
			}

			// Served by Anthropic itself (the cooldown ended): the same
			// body passes untranslated, so the ids must already be valid.
			for _, id := range []string{id0, id1} {
				if !anthropicID.MatchString(id) {
					t.Errorf("id %q would be refused by Anthropic", id)
				}
			}
		})
	}
}

// openAIToolIDs lists the call ids of assistant tool calls and the ids
// tool results answer, in order, from a Chat or Responses request.
func openAIToolIDs(t *testing.T, wire Target, body []byte) (calls, results []string) {
	t.Helper()
	m := decodeJSON(t, body)
	if wire == OpenAIChat {
		for _, msg := range list(m["messages"]) {
			mm := msg.(jmap)
			for _, tc := range list(mm["tool_calls"]) {
				calls = append(calls, jstr(tc.(jmap), "id"))
			}
			if mm["role"] == "tool" {
				results = append(results, jstr(mm, "tool_call_id"))
			}
		}
		return calls, results
	}
	for _, it := range list(m["input"]) {
		im := it.(jmap)
		switch im["type"] {
		case "function_call":
			calls = append(calls, jstr(im, "call_id"))
		case "function_call_output":
			results = append(results, jstr(im, "call_id"))
		}
	}
	return calls, results
}

// The reverse detour: Codex (Responses) or an OpenAI SDK (Chat) served
// by Claude. Anthropic's toolu_ ids reach the client unchanged and come
// back on the next turn as the ids of both the call and its result.
func TestRoundTripOpenAIClientKeepsToolIDs(t *testing.T) {
	const answer = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		"content":[{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"shell","input":{"command":["ls"]}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`
	const stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"shell\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\":[\\\"ls\\\"]}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	const want = "toolu_01T1x1fJ34qAmk2tNTrN7Up6"

	t.Run("responses", func(t *testing.T) {
		out, err := Response(Anthropic, OpenAIResponses, []byte(answer), "gpt-5-codex")
		if err != nil {
			t.Fatal(err)
		}
		item := list(decodeJSON(t, out)["output"])[0].(jmap)
		var sse bytes.Buffer
		if err := Stream(&sse, bytes.NewReader([]byte(stream)), Anthropic, OpenAIResponses, "gpt-5-codex"); err != nil {
			t.Fatal(err)
		}
		var streamed jmap
		for _, ev := range validate(t, OpenAIResponses, sse.Bytes()) {
			if ev.name == "response.output_item.done" {
				streamed = decodeJSON(t, ev.data)["item"].(jmap)
			}
		}
		for _, it := range []jmap{item, streamed} {
			if jstr(it, "call_id") != want {
				t.Fatalf("call_id %q, want %q", jstr(it, "call_id"), want)
			}
		}
		next := []byte(`{"model":"gpt-5-codex","input":[{"type":"message","role":"user","content":"ls"},
			{"type":"function_call","id":"` + jstr(item, "id") + `","call_id":"` + want + `","name":"shell","arguments":` + mustJSON(jstr(item, "arguments")) + `},
			{"type":"function_call_output","call_id":"` + want + `","output":"a b"}],
			"tools":[{"type":"function","name":"shell","parameters":{"type":"object"}}]}`)
		checkAnthropicPairs(t, OpenAIResponses, next, want)
	})

	t.Run("chat", func(t *testing.T) {
		out, err := Response(Anthropic, OpenAIChat, []byte(answer), "gpt-4.1")
		if err != nil {
			t.Fatal(err)
		}
		msg := list(decodeJSON(t, out)["choices"])[0].(jmap)["message"].(jmap)
		call := list(msg["tool_calls"])[0].(jmap)
		if jstr(call, "id") != want {
			t.Fatalf("tool call id %q, want %q", jstr(call, "id"), want)
		}
		callJSON, _ := json.Marshal(call)
		next := []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"ls"},
			{"role":"assistant","content":null,"tool_calls":[` + string(callJSON) + `]},
			{"role":"tool","tool_call_id":"` + want + `","content":"a b"}],
			"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}}]}`)
		checkAnthropicPairs(t, OpenAIChat, next, want)
	})
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkAnthropicPairs translates an OpenAI request with one call and its
// result and checks both carry id in the Anthropic request.
func checkAnthropicPairs(t *testing.T, from Target, body []byte, id string) {
	t.Helper()
	out, err := Request(from, Anthropic, body, "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	var use, result string
	for _, msg := range list(decodeJSON(t, out)["messages"]) {
		for _, b := range list(msg.(jmap)["content"]) {
			bm := b.(jmap)
			switch bm["type"] {
			case "tool_use":
				use = jstr(bm, "id")
			case "tool_result":
				result = jstr(bm, "tool_use_id")
			}
		}
	}
	if use != id || result != id {
		t.Errorf("tool_use %q and tool_result %q, want both %q\n%s", use, result, id, out)
	}
}
