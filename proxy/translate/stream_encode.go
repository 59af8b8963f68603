package translate

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ---- Anthropic Messages SSE: what Claude Code reads ----

type anthropicEncoder struct {
	w     *bytes.Buffer
	model string
	index int
}

func (e *anthropicEncoder) event(name string, fields ...kv) {
	writeEvent(e.w, name, object(append([]kv{{"type", name}}, fields...)...))
}

func (e *anthropicEncoder) start(id string, u aUsage) {
	e.event("message_start", kv{"message", object(
		kv{"id", anthropicIDFromOpenAI(id)}, kv{"type", "message"}, kv{"role", "assistant"},
		kv{"model", e.model}, kv{"content", []any{}}, kv{"stop_reason", nil}, kv{"stop_sequence", nil},
		kv{"usage", u},
	)})
}

func (e *anthropicEncoder) openText() {
	e.event("content_block_start", kv{"index", e.index}, kv{"content_block", object(kv{"type", "text"}, kv{"text", ""})})
}

func (e *anthropicEncoder) openRefusal() { e.openText() }

func (e *anthropicEncoder) textDelta(s string) {
	e.event("content_block_delta", kv{"index", e.index}, kv{"delta", object(kv{"type", "text_delta"}, kv{"text", s})})
}

// thought is dropped: a thinking block needs a signature only Claude
// makes, and Claude refuses a forged one on the next turn.
func (e *anthropicEncoder) thought(string) {}

func (e *anthropicEncoder) openTool(id, name string) {
	e.event("content_block_start", kv{"index", e.index}, kv{"content_block", object(
		kv{"type", "tool_use"}, kv{"id", id}, kv{"name", name}, kv{"input", map[string]any{}})})
}

func (e *anthropicEncoder) argsDelta(s string) {
	e.event("content_block_delta", kv{"index", e.index}, kv{"delta", object(kv{"type", "input_json_delta"}, kv{"partial_json", s})})
}

func (e *anthropicEncoder) closeBlock() {
	e.event("content_block_stop", kv{"index", e.index})
	e.index++
}

// finish sends the input counts in message_delta too: an OpenAI upstream
// reports them only at the end, after message_start said 0.
func (e *anthropicEncoder) finish(stop string, u aUsage) {
	e.event("message_delta", kv{"delta", object(kv{"stop_reason", stop}, kv{"stop_sequence", nil})}, kv{"usage", u})
	e.event("message_stop")
}

func (e *anthropicEncoder) fail(u upstreamError) {
	writeEvent(e.w, "error", anthropicErrorJSON(u))
}

// ---- Chat Completions SSE ----

type chatEncoder struct {
	w       *bytes.Buffer
	model   string
	id      string
	created int64
	tools   int // tool calls opened so far; the open one is tools-1
	inTool  bool
	args    bool // the open tool call has had arguments

	refusing bool // the open block is a refusal
	refused  bool // a refusal was written

	// includeUsage: the client asked for stream_options.include_usage,
	// so the usage comes in a last chunk of its own.
	includeUsage bool
}

type chatDelta struct {
	Role      string      `json:"role,omitempty"`
	Content   *string     `json:"content,omitempty"`
	Refusal   *string     `json:"refusal,omitempty"`
	ToolCalls []cToolCall `json:"tool_calls,omitempty"`
}

func (e *chatEncoder) chunk(d chatDelta, finish any, usage *cUsage) {
	fields := []kv{{"id", e.id}, {"object", "chat.completion.chunk"}, {"created", e.created}, {"model", e.model},
		{"choices", []any{object(kv{"index", 0}, kv{"delta", d}, kv{"finish_reason", finish})}}}
	if usage != nil {
		fields = append(fields, kv{"usage", usage})
	}
	writeData(e.w, object(fields...))
}

func (e *chatEncoder) start(id string, _ aUsage) {
	e.id, e.created = chatIDFromAnthropic(id), now().Unix()
	empty := ""
	e.chunk(chatDelta{Role: "assistant", Content: &empty}, nil, nil)
}

func (e *chatEncoder) openText() {}

func (e *chatEncoder) openRefusal() { e.refusing, e.refused = true, true }

func (e *chatEncoder) textDelta(s string) {
	if e.refusing {
		e.chunk(chatDelta{Refusal: &s}, nil, nil)
		return
	}
	e.chunk(chatDelta{Content: &s}, nil, nil)
}

func (e *chatEncoder) thought(string) {}

func (e *chatEncoder) openTool(id, name string) {
	i := e.tools
	e.tools++
	e.inTool, e.args = true, false
	e.chunk(chatDelta{ToolCalls: []cToolCall{{Index: &i, ID: openAIToolID(id), Type: "function",
		Function: cFunction{Name: name}}}}, nil, nil)
}

func (e *chatEncoder) argsDelta(s string) {
	e.args = true
	i := e.tools - 1
	e.chunk(chatDelta{ToolCalls: []cToolCall{{Index: &i, Function: cFunction{Arguments: s}}}}, nil, nil)
}

// closeBlock gives a call that streamed no arguments (Anthropic's way
// of calling a tool without input) the "{}" OpenAI clients parse.
func (e *chatEncoder) closeBlock() {
	if e.inTool && !e.args {
		e.argsDelta("{}")
	}
	e.inTool, e.refusing = false, false
}

// finish puts the usage on the finishing chunk itself: the client may
// not have asked for stream_options.include_usage, and a usage-only
// chunk with no choices trips clients that did not; those that read
// usage take it from whichever chunk carries it.
//
// A refusal ends with "stop", as OpenAI ends one.
func (e *chatEncoder) finish(stop string, u aUsage) {
	reason := chatFinishReason(stop)
	if e.refused && stop == "refusal" {
		reason = "stop"
	}
	if e.includeUsage {
		e.chunk(chatDelta{}, reason, nil)
		writeData(e.w, object(kv{"id", e.id}, kv{"object", "chat.completion.chunk"}, kv{"created", e.created},
			kv{"model", e.model}, kv{"choices", []any{}}, kv{"usage", chatUsage(u)}))
	} else {
		e.chunk(chatDelta{}, reason, chatUsage(u))
	}
	writeData(e.w, []byte("[DONE]"))
}

func (e *chatEncoder) fail(u upstreamError) {
	writeData(e.w, marshal(struct {
		Error openaiError `json:"error"`
	}{u.openai()}))
}

// ---- Responses SSE: what Codex CLI reads ----

type responsesEncoder struct {
	w      *bytes.Buffer
	model  string
	msgID  string
	seq    int
	output []rItem // finished items, for response.completed

	// the open item
	item      rItem
	text      strings.Builder
	isText    bool
	isRefusal bool // the open text is a refusal
	refused   bool // a refusal was written

	names map[string]nsTool // the client's namespaced tools (AnswerOptions)
}

func (e *responsesEncoder) event(name string, fields ...kv) {
	fields = append([]kv{{"type", name}, {"sequence_number", e.seq}}, fields...)
	e.seq++
	writeEvent(e.w, name, object(fields...))
}

func (e *responsesEncoder) response(status string, output []rItem, u *rUsage) rResponse {
	return rResponse{ID: responseIDFromAnthropic(e.msgID), Object: "response", CreatedAt: now().Unix(),
		Status: status, Error: json.RawMessage("null"), Model: e.model, Output: output, Usage: u}
}

func (e *responsesEncoder) start(id string, _ aUsage) {
	e.msgID = id
	r := e.response("in_progress", []rItem{}, nil)
	e.event("response.created", kv{"response", r})
	e.event("response.in_progress", kv{"response", r})
}

func (e *responsesEncoder) openText() { e.openMessage(false, outText("")) }

func (e *responsesEncoder) openRefusal() { e.openMessage(true, rRefusalPart{Type: "refusal"}) }

// rRefusalPart is a refusal part whose text is present even when empty,
// as content_part.added carries it.
type rRefusalPart struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

// openMessage opens a message item with one content part, text or a
// refusal.
func (e *responsesEncoder) openMessage(refusal bool, part any) {
	e.isText, e.isRefusal = true, refusal
	e.refused = e.refused || refusal
	e.text.Reset()
	e.item = messageItem(messageItemID(e.msgID, len(e.output)), "in_progress")
	e.event("response.output_item.added", kv{"output_index", len(e.output)}, kv{"item", e.item})
	e.event("response.content_part.added", kv{"item_id", e.item.ID}, kv{"output_index", len(e.output)},
		kv{"content_index", 0}, kv{"part", part})
}

func (e *responsesEncoder) textDelta(s string) {
	e.text.WriteString(s)
	if e.isRefusal {
		e.event("response.refusal.delta", kv{"item_id", e.item.ID}, kv{"output_index", len(e.output)},
			kv{"content_index", 0}, kv{"delta", s})
		return
	}
	e.event("response.output_text.delta", kv{"item_id", e.item.ID}, kv{"output_index", len(e.output)},
		kv{"content_index", 0}, kv{"delta", s}, kv{"logprobs", []any{}})
}

// thought is dropped: a reasoning item would need the encrypted content
// only OpenAI makes.
func (e *responsesEncoder) thought(string) {}

func (e *responsesEncoder) openTool(id, name string) {
	e.isText, e.isRefusal = false, false
	e.text.Reset()
	e.item = functionItemFor(e.names, openAIToolID(id), name, "", "in_progress")
	e.event("response.output_item.added", kv{"output_index", len(e.output)}, kv{"item", e.item})
}

func (e *responsesEncoder) argsDelta(s string) {
	e.text.WriteString(s)
	e.event("response.function_call_arguments.delta", kv{"item_id", e.item.ID}, kv{"output_index", len(e.output)}, kv{"delta", s})
}

func (e *responsesEncoder) closeBlock() {
	i := len(e.output)
	var done rItem
	switch {
	case e.isRefusal:
		full := e.text.String()
		e.event("response.refusal.done", kv{"item_id", e.item.ID}, kv{"output_index", i},
			kv{"content_index", 0}, kv{"refusal", full})
		e.event("response.content_part.done", kv{"item_id", e.item.ID}, kv{"output_index", i},
			kv{"content_index", 0}, kv{"part", rRefusalPart{Type: "refusal", Refusal: full}})
		done = refusalItem(e.item.ID, "completed", full)
	case e.isText:
		full := e.text.String()
		e.event("response.output_text.done", kv{"item_id", e.item.ID}, kv{"output_index", i},
			kv{"content_index", 0}, kv{"text", full}, kv{"logprobs", []any{}})
		e.event("response.content_part.done", kv{"item_id", e.item.ID}, kv{"output_index", i},
			kv{"content_index", 0}, kv{"part", outText(full)})
		done = messageItem(e.item.ID, "completed", outText(full))
	default:
		args := e.text.String()
		if args == "" {
			args = "{}" // a tool called with no input streams no arguments
		}
		e.event("response.function_call_arguments.done", kv{"item_id", e.item.ID}, kv{"output_index", i}, kv{"arguments", args})
		done = e.item
		done.Arguments, done.Status = &args, "completed"
	}
	e.event("response.output_item.done", kv{"output_index", i}, kv{"item", done})
	e.output = append(e.output, done)
}

// finish ends with response.completed, or response.incomplete when the
// answer was cut by the token limit or a content filter, as OpenAI does;
// a model's refusal completes.
func (e *responsesEncoder) finish(stop string, u aUsage) {
	if e.refused && stop == "refusal" {
		stop = "end_turn"
	}
	r := responseObject(e.msgID, e.model, stop, e.output, u)
	if r.Status == "incomplete" {
		e.event("response.incomplete", kv{"response", r})
		return
	}
	e.event("response.completed", kv{"response", r})
}

// fail ends with response.failed, the event Codex reads an in-stream
// error from (it retries on rate-limit and overload codes).
func (e *responsesEncoder) fail(u upstreamError) {
	if e.msgID == "" {
		e.msgID = "translated" // failed before the upstream said anything
	}
	output := e.output
	if output == nil {
		output = []rItem{}
	}
	r := e.response("failed", output, nil)
	code := u.openaiCode
	if code == "" {
		code = u.openaiType
	}
	r.Error = object(kv{"code", code}, kv{"message", u.message})
	e.event("response.failed", kv{"response", r})
}
