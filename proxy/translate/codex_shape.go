package translate

import (
	"encoding/json"
	"fmt"
	"github.com/tidwall/gjson"
	"sort"
)

// A Responses request bound for the ChatGPT Codex backend crosses no wire,
// but the backend takes only what Codex CLI sends (its Responses request
// in codex-rs: model, instructions, input, tools, tool_choice,
// parallel_tool_calls, reasoning, store, stream, include,
// prompt_cache_key, text, service_tier, client_metadata). It answers 400
// to stream false, to missing instructions and to max_output_tokens, so
// another client's request (the OpenAI SDK, opencode) is shaped here:
// the fields the backend refuses are dropped with a note, and what would
// change the request's meaning (stored conversations) is refused. Fields
// not listed pass: the backend judges what it does not know, and a newer
// Codex CLI's fields must not be lost.
var codexFields = map[string]rule{
	"max_output_tokens": {noted, "the ChatGPT backend takes no output cap"},
	"temperature":       {noted, "the ChatGPT backend takes only the default"},
	"top_p":             {noted, "the ChatGPT backend takes only the default"},
	"truncation":        {noted, "the ChatGPT backend takes no truncation setting"},
	"max_tool_calls":    {noted, "the ChatGPT backend takes no cap on hosted tool calls"},
	"top_logprobs":      {noted, "the ChatGPT backend returns no log probabilities"},
	"metadata":          {silent, ""},
	"stream_options":    {silent, ""},
	// The end-user id becomes the cache key, as Codex CLI sends its
	// conversation id there.
	"user": {read, ""}, "safety_identifier": {read, ""},
	"previous_response_id": {refuse, "the ChatGPT backend stores no responses to continue"},
	"conversation":         {refuse, "the ChatGPT backend stores no conversations"},
	"prompt":               {refuse, "prompt templates are stored at OpenAI's API, not the ChatGPT backend"},
	"background":           {refuse, "the ChatGPT backend runs no background responses"},
}

// forcedStream is the note on a request made to stream for the backend.
const forcedStream = "forced on: the ChatGPT backend only streams; the answer is collected for a client that asked for JSON"

// neutralInstructions stands in for a client that gave none: the backend
// refuses a request without instructions.
const neutralInstructions = "You are a helpful assistant."

// codexSameWire shapes a Responses request for the Codex backend and sets
// its model. A request already in the backend's shape (Codex CLI's) comes
// back byte for byte, the model aside.
func (c *conv) codexSameWire(body []byte, model string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("translate: request body: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("translate: request body is not a JSON object")
	}
	changed, err := c.codexDrop(m)
	if err != nil {
		return nil, err
	}
	if codexFix(c, m) {
		changed = append(changed, "")
	}
	var cur string
	if json.Unmarshal(m["model"], &cur) != nil || cur != model {
		m["model"] = marshal(model)
		changed = append(changed, "model")
	}
	if len(changed) == 0 {
		return body, nil
	}
	return marshal(m), nil
}

// codexDrop removes the fields the backend refuses, noting each, and
// returns them; a field whose loss would change the request is refused.
func (c *conv) codexDrop(m map[string]json.RawMessage) ([]string, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic notes and first refusal
	var dropped []string
	for _, k := range keys {
		r, ok := codexFields[k]
		if !ok {
			continue
		}
		if isNull(m[k]) {
			delete(m, k)
			dropped = append(dropped, k)
			continue
		}
		switch r.fate {
		case refuse:
			return nil, c.refuse(k, "%s", r.why)
		case noted:
			c.note(k, "dropped: %s", r.why)
		case read:
			codexCacheKey(m, m[k])
		}
		delete(m, k)
		dropped = append(dropped, k)
	}
	return dropped, nil
}

// codexCacheKey makes an end-user id the cache key when the client set
// none.
func codexCacheKey(m map[string]json.RawMessage, id json.RawMessage) {
	var s string
	if _, ok := m["prompt_cache_key"]; ok || json.Unmarshal(id, &s) != nil || s == "" {
		return
	}
	m["prompt_cache_key"] = marshal(openAIUser(s))
}

// codexFix sets what the backend requires: a stream, store false and
// instructions as a string. It reports whether it changed anything.
func codexFix(c *conv, m map[string]json.RawMessage) bool {
	changed := false
	if string(m["stream"]) != "true" {
		c.note("stream", "%s", forcedStream)
		m["stream"] = json.RawMessage("true")
		changed = true
	}
	if string(m["store"]) != "false" {
		if string(m["store"]) == "true" {
			c.note("store", "set to false: the ChatGPT backend stores nothing")
		}
		m["store"] = json.RawMessage("false")
		changed = true
	}
	ins := m["instructions"]
	var s string
	switch {
	case isString(ins) && json.Unmarshal(ins, &s) == nil && s != "":
		return changed
	case !isNull(ins) && !isString(ins):
		// Instructions as input items: they go first in the input, where
		// the backend takes developer messages.
		if merged, ok := prependItems(ins, m["input"]); ok {
			m["input"] = merged
			c.note("instructions", "moved to the start of input: the ChatGPT backend takes instructions as a string")
		}
	default:
		c.note("instructions", "none given; the ChatGPT backend requires instructions, so a neutral one is sent")
	}
	m["instructions"] = marshal(neutralInstructions)
	return true
}

// prependItems puts the items of first before input (a list, or a string
// standing for one user message).
func prependItems(first, input json.RawMessage) (json.RawMessage, bool) {
	var a []json.RawMessage
	if json.Unmarshal(first, &a) != nil {
		return nil, false
	}
	var rest []json.RawMessage
	switch {
	case isString(input):
		var s string
		_ = json.Unmarshal(input, &s)
		rest = []json.RawMessage{marshal(rItem{Role: "user", Content: marshal(s)})}
	case !isNull(input) && json.Unmarshal(input, &rest) != nil:
		return nil, false
	}
	return marshal(append(a, rest...)), true
}

// CodexReady reports that a Responses body is already in the Codex
// backend's shape (Codex CLI's own request): at its top level it streams,
// stores nothing, has instructions, and has none of the fields the
// backend refuses. Parsing a long conversation costs milliseconds a turn;
// gjson walks the top level and skips each value whole. A body that is no
// JSON object is not ready (Request then reads it, and says what is
// wrong with it).
func CodexReady(body []byte) bool {
	top := gjson.ParseBytes(body)
	if !top.IsObject() {
		return false
	}
	stream, store, instructions, refused := false, false, false, false
	top.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "stream":
			stream = v.Type == gjson.True
		case "store":
			store = v.Type == gjson.False
		case "instructions":
			instructions = v.Type == gjson.String && v.Str != ""
		default:
			_, refused = codexFields[k.Str]
		}
		return !refused
	})
	return stream && store && instructions && !refused
}
