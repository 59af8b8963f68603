// Package translate carries a conversation between the Anthropic Messages
// wire and the two OpenAI wires, Chat Completions and Responses, in both
// directions: requests, JSON answers, SSE streams and error bodies.
//
// subpool uses it when every credential of the pool a client asked for is
// cooling and the turn is served by a provider that speaks the other wire.
// The client must not notice: Claude Code gets the Anthropic event
// sequence it reads, Codex CLI the Responses one, and tool calls keep
// their ids so the next turn's tool results still match (on either
// provider).
//
// The pairs are Anthropic ⇄ Chat Completions and Anthropic ⇄ Responses;
// a pair with equal ends passes bodies through (a request gets its new
// model). Chat ⇄ Responses is not offered. ChatGPTCodex is the Responses
// wire as ChatGPT subscriptions serve it, which takes a stricter request.
//
// A detour, in the order the proxy meets it:
//
//	up, err := translate.Request(translate.Anthropic, translate.ChatGPTCodex, body, "gpt-5-codex")
//	// *UnsupportedError: do not detour; answer with the client's own provider's error.
//	// Upstream error status: send ErrorBody(ChatGPTCodex, Anthropic, status, respBody).
//	// Upstream stream, client streaming:
//	t := translate.NewStreamTranslator(translate.ChatGPTCodex, translate.Anthropic, clientModel)
//	// for each upstream event: write t.Feed(name, data), flush; at the end write t.Close().
//	// Upstream stream, client wanting JSON: Collect. Upstream JSON: Response.
//
// What cannot be carried without changing what the request means is
// refused with an *UnsupportedError naming the field, so the proxy can
// keep the client's own provider error instead of answering something
// else. What only tunes or speeds up a request is dropped: silently when
// it is an optimisation (cache_control, prompt_cache_key, store), with a
// note (RequestWithNotes) when it tunes the answer (thinking budget on a
// model without reasoning, top_k, seed). docs/translation.md lists every
// field and its fate.
//
// All functions are pure and safe for concurrent use; a StreamTranslator
// belongs to one stream.
package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Target names a wire: what a client speaks or what an upstream expects.
type Target string

const (
	Anthropic       Target = "anthropic"        // POST /v1/messages
	OpenAIChat      Target = "openai-chat"      // POST /v1/chat/completions
	OpenAIResponses Target = "openai-responses" // POST /v1/responses

	// ChatGPTCodex is the Responses wire as the ChatGPT Codex backend
	// (chatgpt.com/backend-api/codex/responses, behind ChatGPT
	// subscriptions) takes it. It answers like OpenAIResponses but
	// refuses requests the public API accepts: without instructions,
	// with max_output_tokens, or with stream false. A request translated
	// to it is shaped accordingly; use Collect when the client asked for
	// JSON, since the answer will stream.
	ChatGPTCodex Target = "chatgpt-codex"
)

// wire is the answer shape of a target: the Codex backend answers in
// Responses events like the public API.
func wire(t Target) Target {
	if t == ChatGPTCodex {
		return OpenAIResponses
	}
	return t
}

// UnsupportedError says that a request holds something the other wire
// cannot express without changing its meaning. The proxy answers it as a
// client error (400) or, better, keeps the error of the client's own
// provider: the request is fine, only the detour is impossible.
type UnsupportedError struct {
	From, To Target
	// Field is the path of the offending value in the source body, in
	// the source's own spelling: "messages[2].content[0]", "tools[1]".
	Field string
	// Reason says what was there and why it cannot be carried.
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("cannot translate %s to %s: %s: %s", e.From, e.To, e.Field, e.Reason)
}

// Request translates a client request body from one wire to another and
// sets its model. It fails with an *UnsupportedError when the request
// holds something the target cannot carry, or a plain error when the body
// is not a request of the source wire.
func Request(from, to Target, body []byte, model string) ([]byte, error) {
	out, _, err := RequestWithNotes(from, to, body, model)
	return out, err
}

// RequestWithNotes is Request that also says what was dropped or bent on
// the way (one line each, field first), for logs and events. Silent drops
// of pure optimisations are not listed.
func RequestWithNotes(from, to Target, body []byte, model string) ([]byte, []string, error) {
	c := &conv{from: from, to: to}
	var out []byte
	var err error
	switch {
	case !Supported(from, to):
		err = fmt.Errorf("translate: no translation from %q to %q", from, to)
	case wire(from) == wire(to):
		out, err = setModel(body, model)
	case from == Anthropic:
		out, err = c.fromAnthropicRequest(body, model)
	default:
		out, err = c.toAnthropicRequest(body, model)
	}
	if err != nil {
		return nil, nil, err
	}
	return out, c.notes, nil
}

// Response translates a complete (non-streaming) success body of wire
// from into wire to. clientModel is the model the client asked for; the
// answer names it, so the client sees the model it chose.
func Response(from, to Target, body []byte, clientModel string) ([]byte, error) {
	c := &conv{from: from, to: to}
	from, to = wire(from), wire(to)
	switch {
	case !Supported(from, to):
		return nil, fmt.Errorf("translate: no translation from %q to %q", from, to)
	case from == to:
		return body, nil
	case from == OpenAIChat:
		return c.chatToAnthropicResponse(body, clientModel)
	case from == OpenAIResponses:
		return c.responsesToAnthropicResponse(body, clientModel)
	case to == OpenAIChat:
		return c.anthropicToChatResponse(body, clientModel)
	}
	return c.anthropicToResponsesResponse(body, clientModel)
}

// Supported reports whether the pair can be translated: Anthropic to
// and from either OpenAI wire, and any wire to itself. ChatGPTCodex
// counts as the Responses wire except as a request's target.
func Supported(from, to Target) bool {
	known := func(t Target) bool {
		return t == Anthropic || t == OpenAIChat || t == OpenAIResponses || t == ChatGPTCodex
	}
	from, to = wire(from), wire(to)
	return known(from) && known(to) && (from == to || from == Anthropic || to == Anthropic)
}

// now stamps the "created" times OpenAI answers carry and Anthropic ones
// do not. Tests fix it once in TestMain for stable goldens.
var now = time.Now

// conv carries one translation's direction and the notes it collects.
type conv struct {
	from, to Target
	notes    []string
}

func (c *conv) note(field, format string, args ...any) {
	c.notes = append(c.notes, field+": "+fmt.Sprintf(format, args...))
}

func (c *conv) refuse(field, format string, args ...any) error {
	return &UnsupportedError{From: c.from, To: c.to, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func setModel(body []byte, model string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("translate: request body: %w", err)
	}
	b, _ := json.Marshal(model)
	m["model"] = b
	return marshal(m), nil
}

// marshal encodes v without HTML escaping: tool arguments and prompts
// are full of <, > and &, and the escaped form, though equal JSON, makes
// every body longer and every golden unreadable. Only our own types get
// here, so an error is a bug.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("translate: marshal: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// isString reports whether raw JSON is a string (as opposed to an array,
// object or null); several fields on all three wires take either.
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '"'
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func path(base string, i int) string { return fmt.Sprintf("%s[%d]", base, i) }
