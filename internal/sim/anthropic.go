package sim

import "encoding/json"

// obj keeps the wire builders short; encoding/json sorts its keys, which
// no client minds.
type obj = map[string]any

func anthropicUsage(in, out int) obj {
	return obj{
		"input_tokens":                in,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
		"output_tokens":               out,
		"service_tier":                "standard",
	}
}

// messages answers POST /v1/messages: a message object, or the full SSE
// sequence Claude Code reads (message_start … message_stop).
func (x *exchange) messages() {
	model := x.model("claude-sonnet-4-5")
	id := "msg_01" + newID(22)
	tool := x.toolCall()
	in, out := x.inputTokens(), x.outputTokens(tool)
	stop := "end_turn"
	block := obj{"type": "text", "text": x.answerText()}
	if tool != nil {
		stop = "tool_use"
		block = obj{"type": "tool_use", "id": "toolu_01" + newID(22), "name": tool.name, "input": json.RawMessage(tool.args)}
	}

	if !x.req.Stream {
		x.writeJSON(obj{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []obj{block},
			"stop_reason": stop, "stop_sequence": nil,
			"usage": anthropicUsage(in, out),
		})
		return
	}

	st := x.startStream(false)
	st.send("message_start", obj{"type": "message_start", "message": obj{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []obj{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": anthropicUsage(in, 1),
	}}, false)
	if tool != nil {
		start := obj{"type": "tool_use", "id": block["id"], "name": tool.name, "input": obj{}}
		st.send("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": start}, false)
		st.send("ping", []byte(`{"type": "ping"}`), false)
		for _, part := range split(tool.args, x.s.opts.Chunks) {
			st.send("content_block_delta", obj{"type": "content_block_delta", "index": 0,
				"delta": obj{"type": "input_json_delta", "partial_json": part}}, true)
		}
	} else {
		st.send("content_block_start", obj{"type": "content_block_start", "index": 0,
			"content_block": obj{"type": "text", "text": ""}}, false)
		st.send("ping", []byte(`{"type": "ping"}`), false)
		// Every text delta is the same bytes: marshal once.
		delta, _ := json.Marshal(obj{"type": "content_block_delta", "index": 0,
			"delta": obj{"type": "text_delta", "text": x.s.opts.ChunkText}})
		for range x.s.opts.Chunks {
			st.send("content_block_delta", delta, true)
		}
	}
	st.deltasDone()
	st.send("content_block_stop", obj{"type": "content_block_stop", "index": 0}, false)
	st.send("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil},
		"usage": obj{"output_tokens": out}}, false)
	st.send("message_stop", obj{"type": "message_stop"}, false)
	st.end()
}

// countTokens answers POST /v1/messages/count_tokens.
func (x *exchange) countTokens() {
	x.writeJSON(obj{"input_tokens": x.inputTokens()})
}
