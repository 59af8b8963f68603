// Package translate carries a conversation between the Anthropic Messages
// wire, the two OpenAI wires (Chat Completions and Responses) and Google's
// Gemini generateContent wire, in both directions: requests, JSON answers,
// SSE streams and error bodies.
//
// subpool uses it when every credential of the pool a client asked for is
// cooling and the turn is served by a provider that speaks another wire.
// The client must not notice: Claude Code gets the Anthropic event
// sequence it reads, Codex CLI the Responses one, Gemini CLI Gemini
// chunks, and tool calls keep their ids so the next turn's tool results
// still match (on either provider).
//
// Every pair of the four wires is translated both ways; a pair with
// equal ends passes bodies through (a request gets its new model; a
// Responses request bound for ChatGPTCodex is put in the backend's shape).
// Two targets are variants of a wire: ChatGPTCodex is the Responses wire
// as ChatGPT subscriptions serve it, which takes a stricter request;
// GeminiCodeAssist is the Gemini wire inside the Code Assist envelope that
// a Google login (Gemini CLI's "Login with Google") speaks.
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
// Gemini keeps two things of a request in its URL rather than its body:
// the model (/v1beta/models/{model}:generateContent) and whether the answer
// streams (:streamGenerateContent?alt=sse). So:
//
//   - a request translated to Gemini has no model and no stream flag; send
//     it to /v1beta/models/{model}:generateContent, or
//     :streamGenerateContent?alt=sse when the client asked for a stream
//     (/v1internal:… for GeminiCodeAssist, whose envelope does carry the
//     model);
//   - a Gemini client's request is translated with RequestWithOptions and
//     RequestOptions{Stream: true} when it came on :streamGenerateContent
//     (ParseGeminiPath reads the call, model and method, from its path);
//     the body's lack of a flag would otherwise mean a JSON answer.
//
// The Code Assist envelope ({"model","project","user_prompt_id","request"}
// around a generateContent request, {"response","traceId"} around an
// answer) is read and written by ReadCodeAssist, SetCodeAssist,
// WrapCodeAssist, UnwrapCodeAssist, WrapCodeAssistResponse and
// UnwrapCodeAssistResponse. A request translated to GeminiCodeAssist names
// its model but no project: set the credential's with SetCodeAssist.
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

	// Gemini is Google's generateContent wire as the Gemini API serves it
	// to API keys: POST /v1beta/models/{model}:generateContent, or
	// :streamGenerateContent?alt=sse for a stream (GeminiBeta). The
	// model and the stream flag are in the path, not the body.
	Gemini Target = "gemini"

	// GeminiCodeAssist is the Gemini wire as Code Assist serves it behind
	// a Google login (cloudcode-pa.googleapis.com/v1internal:generateContent
	// and :streamGenerateContent?alt=sse, CodeAssistPrefix): the same
	// request inside an envelope that names the model and the Google Cloud
	// project, and the same answer inside {"response": …}, each stream
	// event too.
	GeminiCodeAssist Target = "gemini-code-assist"
)

// wire is the family of a target: the Codex backend answers in Responses
// events like the public API, and Code Assist in Gemini chunks (wrapped;
// the functions that meet the envelope unwrap it first).
func wire(t Target) Target {
	switch t {
	case ChatGPTCodex:
		return OpenAIResponses
	case GeminiCodeAssist:
		return Gemini
	}
	return t
}

// name is how a note or refusal calls the target's side.
func name(t Target) string {
	switch wire(t) {
	case Anthropic:
		return "Claude"
	case Gemini:
		return "Gemini"
	}
	return "OpenAI"
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
	return RequestWithOptions(from, to, body, model, RequestOptions{})
}

// RequestOptions carries what a request says outside its body.
type RequestOptions struct {
	// Stream says that a Gemini or GeminiCodeAssist request came on
	// :streamGenerateContent, so the translated request asks for a
	// stream. Other wires say it in the body, and this is ignored for
	// them.
	Stream bool
}

// RequestWithOptions is RequestWithNotes for a request whose stream flag
// is in its URL: a Gemini client's.
func RequestWithOptions(from, to Target, body []byte, model string, o RequestOptions) ([]byte, []string, error) {
	c := &conv{from: from, to: to}
	var out []byte
	var err error
	switch {
	case !Supported(from, to):
		err = fmt.Errorf("translate: no translation from %q to %q", from, to)
	case wire(from) == wire(to):
		out, err = c.sameWire(body, model)
	default:
		var r *request
		if r, err = c.read(body); err == nil {
			if wire(from) == Gemini {
				r.stream = o.Stream
			}
			out, err = c.write(r, model)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return out, c.notes, nil
}

// read reads a request of c.from into the neutral form.
func (c *conv) read(body []byte) (*request, error) {
	switch c.from {
	case Anthropic:
		return c.readAnthropic(body)
	case OpenAIChat:
		return c.readChat(body)
	case Gemini:
		return c.readGemini(body)
	case GeminiCodeAssist:
		env, err := readEnvelope(body)
		if err != nil {
			return nil, err
		}
		return c.readGemini(env.Request)
	}
	return c.readResponses(body)
}

// write writes the neutral form as a request of c.to.
func (c *conv) write(r *request, model string) ([]byte, error) {
	switch c.to {
	case Anthropic:
		return c.writeAnthropic(r, model)
	case OpenAIChat:
		return c.writeChat(r, model)
	case OpenAIResponses, ChatGPTCodex:
		return c.writeResponses(r, model, c.to == ChatGPTCodex)
	}
	return c.writeGemini(r, model, c.to == GeminiCodeAssist)
}

// sameWire passes a body to a target of its own wire: a new model, and
// for Gemini the envelope put on or taken off (a Gemini body names no
// model; its URL does).
func (c *conv) sameWire(body []byte, model string) ([]byte, error) {
	switch {
	case wire(c.from) == OpenAIResponses && c.to == ChatGPTCodex && c.from != ChatGPTCodex:
		return c.codexSameWire(body, model)
	case wire(c.from) != Gemini:
		return setModel(body, model)
	case c.from == Gemini && c.to == Gemini:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("translate: request body: %w", err)
		}
		return body, nil
	case c.from == GeminiCodeAssist && c.to == GeminiCodeAssist:
		return SetCodeAssist(body, CodeAssist{Model: model})
	case c.from == GeminiCodeAssist:
		inner, _, err := UnwrapCodeAssist(body)
		return inner, err
	}
	return WrapCodeAssist(body, CodeAssist{Model: model})
}

// Response translates a complete (non-streaming) success body of wire
// from into wire to. clientModel is the model the client asked for; the
// answer names it, so the client sees the model it chose.
func Response(from, to Target, body []byte, clientModel string) ([]byte, error) {
	return response(&conv{from: from, to: to}, body, clientModel)
}

func response(c *conv, body []byte, clientModel string) ([]byte, error) {
	from, to := c.from, c.to
	switch {
	case !Supported(from, to):
		return nil, fmt.Errorf("translate: no translation from %q to %q", from, to)
	case from == to || wire(from) == wire(to) && wire(from) != Gemini:
		return body, nil
	case from == GeminiCodeAssist:
		inner, err := UnwrapCodeAssistResponse(body)
		if err != nil {
			return nil, err
		}
		return response(&conv{from: Gemini, to: to, names: c.names}, inner, clientModel)
	case to == GeminiCodeAssist:
		out, err := response(&conv{from: from, to: Gemini, names: c.names}, body, clientModel)
		if err != nil {
			return nil, err
		}
		return WrapCodeAssistResponse(out)
	}
	// The answer in the Anthropic form, through which every pair goes.
	var msg *aResponse
	var err error
	switch wire(from) {
	case Anthropic:
		msg, err = anthropicAnswer(body)
	case OpenAIChat:
		msg, err = c.chatToAnthropicResponse(body, clientModel)
	case OpenAIResponses:
		msg, err = c.responsesToAnthropicResponse(body, clientModel)
	case Gemini:
		msg, err = c.geminiToAnthropicResponse(body, clientModel)
	}
	if err != nil {
		return nil, err
	}
	return c.answer(msg, to, clientModel)
}

// answer writes an answer in the Anthropic form as one of wire to.
func (c *conv) answer(msg *aResponse, to Target, clientModel string) ([]byte, error) {
	switch wire(to) {
	case Anthropic:
		return marshal(msg), nil
	case OpenAIChat:
		return c.anthropicToChatResponse(msg, clientModel)
	case OpenAIResponses:
		return c.anthropicToResponsesResponse(msg, clientModel)
	}
	out, err := c.anthropicToGeminiResponse(msg, clientModel)
	if err != nil || to != GeminiCodeAssist {
		return out, err
	}
	return WrapCodeAssistResponse(out)
}

// Supported reports whether the pair can be translated: any two of the
// targets, either way. ChatGPTCodex counts as the Responses wire and
// GeminiCodeAssist as the Gemini wire.
func Supported(from, to Target) bool {
	known := func(t Target) bool {
		switch t {
		case Anthropic, OpenAIChat, OpenAIResponses, ChatGPTCodex, Gemini, GeminiCodeAssist:
			return true
		}
		return false
	}
	return known(from) && known(to)
}

// now stamps the "created" times OpenAI answers carry and Anthropic ones
// do not. Tests fix it once in TestMain for stable goldens.
var now = time.Now

// conv carries one translation's direction and the notes it collects.
type conv struct {
	from, to Target
	notes    []string
	names    map[string]nsTool // a Responses client's namespaced tools (AnswerOptions)
}

func (c *conv) note(field, format string, args ...any) {
	c.notes = append(c.notes, field+": "+fmt.Sprintf(format, args...))
}

// toGemini reports a request bound for either Gemini target.
func (c *conv) toGemini() bool { return wire(c.to) == Gemini }

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
