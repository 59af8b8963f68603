package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// responses answers POST /v1/responses and the ChatGPT Codex backend's
// POST /backend-api/codex/responses: a response object, or the SSE
// sequence Codex CLI reads (response.created … response.completed).
func (x *exchange) responses() {
	model := x.model("gpt-5")
	tool := x.toolCall()
	in, out := x.inputTokens(), x.outputTokens(tool)
	created := x.s.clk.Now().Unix()
	respID := "resp_" + newID(32)
	tools := any([]any{})
	if len(x.req.Tools) > 0 {
		tools = x.req.Tools
	}
	response := func(status string, output []obj, usage any) obj {
		return obj{
			"id": respID, "object": "response", "created_at": created,
			"status": status, "error": nil, "incomplete_details": nil,
			"instructions": nil, "max_output_tokens": nil, "model": model,
			"output": output, "parallel_tool_calls": true,
			"previous_response_id": nil, "reasoning": obj{"effort": nil, "summary": nil},
			"store": false, "text": obj{"format": obj{"type": "text"}},
			"tool_choice": "auto", "tools": tools, "truncation": "disabled",
			"usage": usage, "metadata": obj{},
		}
	}
	usage := obj{
		"input_tokens": in, "input_tokens_details": obj{"cached_tokens": 0},
		"output_tokens": out, "output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens": in + out,
	}
	text := x.answerText()
	textPart := func(t string) obj { return obj{"type": "output_text", "text": t, "annotations": []any{}} }
	var item, added obj
	if tool != nil {
		item = obj{"id": "fc_" + newID(32), "type": "function_call", "status": "completed",
			"arguments": tool.args, "call_id": "call_" + newID(24), "name": tool.name}
		added = obj{"id": item["id"], "type": "function_call", "status": "in_progress",
			"arguments": "", "call_id": item["call_id"], "name": tool.name}
	} else {
		item = obj{"id": "msg_" + newID(32), "type": "message", "status": "completed",
			"role": "assistant", "content": []obj{textPart(text)}}
		added = obj{"id": item["id"], "type": "message", "status": "in_progress",
			"role": "assistant", "content": []obj{}}
	}

	if !x.req.Stream {
		x.writeJSON(response("completed", []obj{item}, usage))
		return
	}

	st := x.startStream(false)
	seq := 0
	ev := func(name string, fields obj, delta bool) {
		fields["type"] = name
		fields["sequence_number"] = seq
		seq++
		st.send(name, fields, delta)
	}
	itemID := item["id"]
	ev("response.created", obj{"response": response("in_progress", []obj{}, nil)}, false)
	ev("response.in_progress", obj{"response": response("in_progress", []obj{}, nil)}, false)
	ev("response.output_item.added", obj{"output_index": 0, "item": added}, false)
	if tool != nil {
		for _, part := range split(tool.args, x.s.opts.Chunks) {
			ev("response.function_call_arguments.delta", obj{"item_id": itemID, "output_index": 0, "delta": part}, true)
		}
		st.deltasDone()
		ev("response.function_call_arguments.done", obj{"item_id": itemID, "output_index": 0, "arguments": tool.args}, false)
	} else {
		ev("response.content_part.added", obj{"item_id": itemID, "output_index": 0, "content_index": 0, "part": textPart("")}, false)
		for range x.s.opts.Chunks {
			ev("response.output_text.delta", obj{"item_id": itemID, "output_index": 0, "content_index": 0,
				"delta": x.s.opts.ChunkText, "logprobs": []any{}}, true)
		}
		st.deltasDone()
		ev("response.output_text.done", obj{"item_id": itemID, "output_index": 0, "content_index": 0,
			"text": text, "logprobs": []any{}}, false)
		ev("response.content_part.done", obj{"item_id": itemID, "output_index": 0, "content_index": 0, "part": textPart(text)}, false)
	}
	ev("response.output_item.done", obj{"output_index": 0, "item": item}, false)
	ev("response.completed", obj{"response": response("completed", []obj{item}, usage)}, false)
	st.end()
}

const fingerprint = "fp_5s1m0d3l42"

// chat answers POST /v1/chat/completions: a chat.completion, or
// chat.completion.chunk data lines ending with data: [DONE].
func (x *exchange) chat() {
	model := x.model("gpt-4o-mini")
	tool := x.toolCall()
	in, out := x.inputTokens(), x.outputTokens(tool)
	id := "chatcmpl-" + newID(29)
	created := x.s.clk.Now().Unix()
	usage := obj{
		"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out,
		"prompt_tokens_details": obj{"cached_tokens": 0, "audio_tokens": 0},
		"completion_tokens_details": obj{"reasoning_tokens": 0, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
	finish := "stop"
	var callID string
	if tool != nil {
		finish = "tool_calls"
		callID = "call_" + newID(24)
	}

	if !x.req.Stream {
		msg := obj{"role": "assistant", "content": x.answerText(), "refusal": nil, "annotations": []any{}}
		if tool != nil {
			msg["content"] = nil
			msg["tool_calls"] = []obj{{"id": callID, "type": "function",
				"function": obj{"name": tool.name, "arguments": tool.args}}}
		}
		x.writeJSON(obj{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []obj{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   usage, "service_tier": "default", "system_fingerprint": fingerprint,
		})
		return
	}

	includeUsage := x.req.StreamOptions != nil && x.req.StreamOptions.IncludeUsage
	chunk := func(delta obj, finish any) obj {
		c := obj{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"service_tier": "default", "system_fingerprint": fingerprint,
			"choices": []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			c["usage"] = nil // every chunk but the last says null, as upstream does
		}
		return c
	}
	const name = "chat.completion.chunk"
	st := x.startStream(true)
	if tool != nil {
		st.send(name, chunk(obj{"role": "assistant", "content": nil, "refusal": nil,
			"tool_calls": []obj{{"index": 0, "id": callID, "type": "function",
				"function": obj{"name": tool.name, "arguments": ""}}}}, nil), false)
		for _, part := range split(tool.args, x.s.opts.Chunks) {
			st.send(name, chunk(obj{"tool_calls": []obj{{"index": 0,
				"function": obj{"arguments": part}}}}, nil), true)
		}
	} else {
		st.send(name, chunk(obj{"role": "assistant", "content": "", "refusal": nil}, nil), false)
		delta, _ := json.Marshal(chunk(obj{"content": x.s.opts.ChunkText}, nil))
		for range x.s.opts.Chunks {
			st.send(name, delta, true)
		}
	}
	st.deltasDone()
	st.send(name, chunk(obj{}, finish), false)
	if includeUsage {
		last := chunk(obj{}, nil)
		last["choices"] = []obj{}
		last["usage"] = usage
		st.send(name, last, false)
	}
	st.send("[DONE]", []byte("[DONE]"), false)
	st.end()
}

// modelList is what GET /v1/models lists.
var modelList = []struct {
	id, owner string
	created   int64
}{
	{"gpt-5", "system", 1754425777},
	{"gpt-5-codex", "system", 1757527818},
	{"gpt-4.1", "system", 1744316542},
	{"gpt-4o-mini", "system", 1721172741},
	{"text-embedding-3-small", "system", 1705948997},
}

// anthropicModels is what GET /v1/models lists to a client that sends
// anthropic-version: Anthropic's shape, with its display names and dates.
var anthropicModels = []struct{ id, name, created string }{
	{"claude-opus-4-5-20251101", "Claude Opus 4.5", "2025-11-24T00:00:00Z"},
	{"claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "2025-09-29T00:00:00Z"},
	{"claude-haiku-4-5-20251001", "Claude Haiku 4.5", "2025-10-15T00:00:00Z"},
}

func (x *exchange) models() {
	if x.r.Header.Get("anthropic-version") != "" {
		data := make([]obj, 0, len(anthropicModels))
		for _, m := range anthropicModels {
			data = append(data, obj{"type": "model", "id": m.id, "display_name": m.name, "created_at": m.created})
		}
		x.writeJSON(obj{"data": data, "has_more": false, "first_id": anthropicModels[0].id, "last_id": anthropicModels[len(anthropicModels)-1].id})
		return
	}
	data := make([]obj, 0, len(modelList))
	for _, m := range modelList {
		data = append(data, obj{"id": m.id, "object": "model", "created": m.created, "owned_by": m.owner})
	}
	x.writeJSON(obj{"object": "list", "data": data})
}

// embeddings answers POST /v1/embeddings with one unit vector per input,
// derived from the input's bytes so equal inputs embed equally.
func (x *exchange) embeddings() {
	var req struct {
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
	}
	_ = json.Unmarshal(x.body, &req)
	inputs := embeddingInputs(req.Input)
	dims := x.req.Dimensions
	if dims <= 0 || dims > 8192 {
		dims = 1536 // text-embedding-3-small
	}
	data := make([]obj, 0, len(inputs))
	for i, in := range inputs {
		vec := embed(in, dims)
		var emb any = vec
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(vec))
			for j, f := range vec {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		data = append(data, obj{"object": "embedding", "index": i, "embedding": emb})
	}
	n := x.inputTokens()
	x.writeJSON(obj{
		"object": "list", "data": data, "model": x.model("text-embedding-3-small"),
		"usage": obj{"prompt_tokens": n, "total_tokens": n},
	})
}

// embeddingInputs splits input into its items: a string or a token array
// is one input; an array of strings or of token arrays is many.
func embeddingInputs(raw json.RawMessage) []json.RawMessage {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return []json.RawMessage{raw}
	}
	var n float64
	if json.Unmarshal(items[0], &n) == nil {
		return []json.RawMessage{raw}
	}
	return items
}

func embed(in []byte, dims int) []float32 {
	h := fnv.New64a()
	h.Write(in)
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vec := make([]float32, dims)
	var norm float64
	for i := range vec {
		f := rng.NormFloat64()
		vec[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / norm)
	}
	return vec
}
