// Package tokens reads the token usage an upstream reports, as the answer
// passes to the client: no I/O, no buffering beyond the one SSE event or
// JSON body the caller already holds.
//
// Usage has one meaning whatever the wire. Input is the prompt tokens that
// were neither read from nor written to the prompt cache; CacheRead and
// CacheWrite are the rest, so Input+CacheRead+CacheWrite is the whole
// prompt. Anthropic reports it that way already; OpenAI counts cached
// tokens inside input_tokens/prompt_tokens, so they are taken out of Input
// here. Prices apply per kind, which is why the split matters.
package metering

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"
)

// Usage is token counts for one request.
type Usage struct {
	Input      int64 `json:"input_tokens"`       // uncached prompt tokens
	Output     int64 `json:"output_tokens"`      // completion tokens (reasoning included)
	CacheRead  int64 `json:"cache_read_tokens"`  // prompt tokens served from the cache
	CacheWrite int64 `json:"cache_write_tokens"` // prompt tokens written to the cache (Anthropic)
}

// Total is every token counted.
func (u Usage) Total() int64 { return u.Input + u.Output + u.CacheRead + u.CacheWrite }

// Meter keeps the last usage an upstream reported for one answer. Feed it
// each SSE event (Event) or the whole JSON answer (JSON); read Usage when
// the answer is done, or when the client left, for the tokens seen so far.
// The zero value is ready. A Meter is not safe for concurrent use; one
// answer is read by one goroutine.
type Meter struct {
	u    Usage
	seen bool
	// openai: the counts came with OpenAI's meaning (cached inside input).
	inputAll, cached int64
	openai           bool
}

// Usage is what the upstream reported so far.
func (m *Meter) Usage() Usage { return m.u }

// Seen reports whether any usage was reported at all (an answer cut
// before its first usage-bearing event has none).
func (m *Meter) Seen() bool { return m.seen }

// Event takes one SSE event: its name (the "event:" line, "" when there
// was none, as in Chat Completions) and its data. Only the events that can
// carry usage are parsed; every other one costs a string compare, and a
// nameless one a byte search.
func (m *Meter) Event(name string, data []byte) {
	switch name {
	case "message_start":
		// {"type":"message_start","message":{..., "usage":{...}}}. As
		// for every event, only the usage object is read and checked:
		// broken JSON elsewhere in the event does not lose its counts.
		m.at(data, "message.usage")
	case "message_delta":
		// {"type":"message_delta","delta":{...},"usage":{"output_tokens":N}}:
		// cumulative, so later values replace earlier ones.
		m.top(data)
	case "response.completed", "response.incomplete", "response.failed":
		// Responses: the final response object carries usage; an
		// incomplete or failed one may too, and was still billed.
		m.response(data)
	case "":
		m.nameless(data)
	}
}

// nameless handles data-only events: Chat Completions chunks, and the
// Messages or Responses events of a client path that drops event names.
// The latter open with their type, so the type stands in for the name.
func (m *Meter) nameless(data []byte) {
	if m.gemini(data) {
		return
	}
	if rest, ok := bytes.CutPrefix(data, typePrefix); ok {
		if i := bytes.IndexByte(rest, '"'); i > 0 {
			switch typ := rest[:i]; string(typ) { // no allocation: compared, not kept
			case "message_start", "message_delta", "response.completed", "response.incomplete", "response.failed":
				m.Event(string(typ), data)
			}
		}
		return
	}
	// Chat Completions: every chunk but the last says "usage":null.
	i := bytes.Index(data, usageKey)
	if i < 0 || !objectFollows(data[i+len(usageKey):]) {
		return
	}
	m.top(data)
}

// JSON takes a whole non-streaming answer: Messages, Responses or Chat
// Completions, whose usage sits at the top level, or Gemini's.
func (m *Meter) JSON(body []byte) {
	if m.gemini(body) {
		return
	}
	if !bytes.Contains(body, usageKey) {
		return
	}
	m.top(body)
}

// top, response and message_start read only the usage object: a whole
// answer (or a response.completed event, which repeats the answer) can be
// large, and decoding all of it to read a few counts cost more than the
// rest of the proxy's work on a request (issue 27's profile). gjson
// finds the object without decoding what is around it, and reads its
// counts without reflection.
func (m *Meter) top(data []byte) { m.at(data, "usage") }

func (m *Meter) response(data []byte) { m.at(data, "response.usage") }

func (m *Meter) at(data []byte, path string) {
	r := gjson.GetBytes(data, path)
	if !r.IsObject() {
		return
	}
	if w, ok := readUsage(r.Raw); ok {
		m.apply(&w)
	}
}

var (
	usageKey   = []byte(`"usage"`)
	typePrefix = []byte(`{"type":"`)
)

// objectFollows reports whether b, just after a key, holds ':' and then
// an object.
func objectFollows(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != ':' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// wireUsage is the union of the three wires' usage objects.
type wireUsage struct {
	// Anthropic Messages; Responses also uses input_tokens/output_tokens.
	InputTokens   count // input_tokens
	OutputTokens  count // output_tokens
	CacheRead     count // cache_read_input_tokens
	CacheCreation count // cache_creation_input_tokens
	// Responses
	InputDetails details // input_tokens_details
	// Chat Completions
	PromptTokens     count   // prompt_tokens
	CompletionTokens count   // completion_tokens
	PromptDetails    details // prompt_tokens_details
}

// count is one count of a usage object. set tells a count that is absent
// or null (keep what we had) from a zero.
type count struct {
	n   int64
	set bool
}

// details is an input_tokens_details or prompt_tokens_details object; set
// when it was there and not null.
type details struct {
	CachedTokens count // cached_tokens
	set          bool
}

// readUsage reads a usage object. It keeps what decoding it with
// encoding/json into pointer fields did: a count must be an integer that
// fits in int64 (so not 12.0, 1e3, "12" or true) or null, which reads as
// absent; a details field must be an object or null; other fields may
// hold anything; the last of repeated fields wins; and one bad value or
// broken JSON drops the whole object (ok false). One difference: field
// names match exactly, where encoding/json also took "Input_Tokens".
func readUsage(raw string) (w wireUsage, ok bool) {
	if !gjson.Valid(raw) {
		return w, false
	}
	ok = true
	gjson.Parse(raw).ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "input_tokens":
			ok = w.InputTokens.read(v)
		case "output_tokens":
			ok = w.OutputTokens.read(v)
		case "cache_read_input_tokens":
			ok = w.CacheRead.read(v)
		case "cache_creation_input_tokens":
			ok = w.CacheCreation.read(v)
		case "input_tokens_details":
			ok = w.InputDetails.read(v)
		case "prompt_tokens":
			ok = w.PromptTokens.read(v)
		case "completion_tokens":
			ok = w.CompletionTokens.read(v)
		case "prompt_tokens_details":
			ok = w.PromptDetails.read(v)
		}
		return ok
	})
	return w, ok
}

// read takes a count's value; false when it is not an int64 or null.
func (c *count) read(v gjson.Result) bool {
	switch v.Type {
	case gjson.Null:
		*c = count{}
		return true
	case gjson.Number:
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil {
			return false
		}
		*c = count{n: n, set: true}
		return true
	}
	return false
}

// read takes a details object; false when it is neither an object nor
// null, or holds a bad cached_tokens. A repeated object adds to the first,
// as encoding/json did.
func (d *details) read(v gjson.Result) bool {
	switch {
	case v.Type == gjson.Null:
		*d = details{}
		return true
	case v.IsObject():
		d.set = true
		ok := true
		v.ForEach(func(key, v gjson.Result) bool {
			if key.Str == "cached_tokens" {
				ok = d.CachedTokens.read(v)
			}
			return ok
		})
		return ok
	}
	return false
}

func (m *Meter) apply(w *wireUsage) {
	m.seen = true
	set := func(dst *int64, src count) {
		if src.set {
			*dst = src.n
		}
	}
	// OpenAI's shapes: input includes the cached part.
	if w.PromptTokens.set || w.CompletionTokens.set || w.InputDetails.set || w.PromptDetails.set {
		m.openai = true
		set(&m.inputAll, w.InputTokens)
		set(&m.inputAll, w.PromptTokens)
		set(&m.u.Output, w.OutputTokens)
		set(&m.u.Output, w.CompletionTokens)
		set(&m.cached, w.InputDetails.CachedTokens)
		set(&m.cached, w.PromptDetails.CachedTokens)
		m.u.CacheRead = min(m.cached, m.inputAll)
		m.u.Input = m.inputAll - m.u.CacheRead
		return
	}
	if m.openai {
		// A later OpenAI-shaped event without details: same meaning.
		set(&m.inputAll, w.InputTokens)
		set(&m.u.Output, w.OutputTokens)
		m.u.CacheRead = min(m.cached, m.inputAll)
		m.u.Input = m.inputAll - m.u.CacheRead
		return
	}
	set(&m.u.Input, w.InputTokens)
	set(&m.u.Output, w.OutputTokens)
	set(&m.u.CacheRead, w.CacheRead)
	set(&m.u.CacheWrite, w.CacheCreation)
}
