package sim

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
)

// Error bodies in each provider's shape (shared/reference/protocols.md).

func anthropicError(typ, msg, requestID string) []byte {
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{typ, msg}, RequestID: requestID})
	return b
}

// openaiError is {"error":{"message","type","param":null,"code"}}; an
// empty code is sent as null, as OpenAI does.
func openaiError(msg, typ, code string) []byte {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": c,
	}})
	return b
}

func (x *exchange) notFoundBody() []byte {
	if x.provider == Google {
		return x.googleNotFound()
	}
	if x.provider == Anthropic {
		return anthropicError("not_found_error", "Not Found", x.reqID)
	}
	return openaiError("Invalid URL ("+x.r.Method+" "+x.r.URL.Path+")", "invalid_request_error", "")
}

func (x *exchange) missingKeyBody() []byte {
	if x.provider == Google {
		return x.googleMissingCredential()
	}
	if x.provider == Anthropic {
		return anthropicError("authentication_error", "x-api-key header is required", x.reqID)
	}
	return openaiError("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.", "invalid_request_error", "")
}

func (x *exchange) badBodyBody(err error) []byte {
	msg := "The request body is not valid JSON."
	tooLarge := err != nil || len(x.body) > maxBody
	if tooLarge {
		msg = "Request exceeds the maximum allowed number of bytes."
	}
	if x.provider == Google {
		return x.googleBadBody(tooLarge)
	}
	if x.provider == Anthropic {
		return anthropicError("invalid_request_error", msg, x.reqID)
	}
	return openaiError(msg, "invalid_request_error", "")
}

// defaultErrorBody is the canned body for a scripted status with no Body.
func (x *exchange) defaultErrorBody(status int) []byte {
	if x.provider == Google {
		return x.googleBody(defaultGoogleErr(status, x.codeAssist()))
	}
	if x.provider == Anthropic {
		typ, msg := "api_error", "Internal server error"
		switch {
		case status == 400:
			typ, msg = "invalid_request_error", "Invalid request"
		case status == 401:
			typ, msg = "authentication_error", "invalid x-api-key"
		case status == 402:
			typ, msg = "billing_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
		case status == 403:
			typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
		case status == 404:
			typ, msg = "not_found_error", "model: "+x.req.Model
		case status == 413:
			typ, msg = "request_too_large", "Request exceeds the maximum allowed number of bytes."
		case status == 429:
			typ, msg = "rate_limit_error", anthropicRateLimitMsg
		case status == 504:
			typ, msg = "timeout_error", "Request timed out"
		case status == 529:
			typ, msg = "overloaded_error", "Overloaded"
		case status < 500:
			typ, msg = "invalid_request_error", http.StatusText(status)
		}
		return anthropicError(typ, msg, x.reqID)
	}
	typ, code, msg := "server_error", "", "The server had an error while processing your request. Sorry about that!"
	switch {
	case status == 401:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case status == 403:
		typ, code, msg = "invalid_request_error", "", "You are not allowed to sample from this model"
	case status == 404:
		typ, code, msg = "invalid_request_error", "model_not_found", "The model `"+x.req.Model+"` does not exist or you do not have access to it."
	case status == 429:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Visit https://platform.openai.com/account/rate-limits to learn more."
	case status == 503:
		msg = "The server is overloaded or not ready yet."
	case status < 500:
		typ, msg = "invalid_request_error", http.StatusText(status)
	}
	return openaiError(msg, typ, code)
}

// newID is n random base62 characters, the look of upstream ids.
func newID(n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// tokens is the usual four-bytes-a-token estimate, at least one.
func tokens(n int) int { return max((n+3)/4, 1) }

// Tokens is how many tokens the sim counts for n bytes of a request body or
// an answer's text: tests compute the usage the sim will report.
func Tokens(n int) int { return tokens(n) }

func (x *exchange) inputTokens() int { return tokens(len(x.body)) }

// answerText is what a text answer says: ChunkText, Chunks times.
func (x *exchange) answerText() string {
	return strings.Repeat(x.s.opts.ChunkText, x.s.opts.Chunks)
}

func (x *exchange) outputTokens(tool *toolCall) int {
	if tool != nil {
		return tokens(len(tool.args))
	}
	return tokens(len(x.answerText()))
}

// cost is what a request charges against a token quota, known up front
// because the sim decides its answer before sending it.
func (x *exchange) cost() int {
	return x.inputTokens() + x.outputTokens(x.toolCall())
}

func (x *exchange) model(fallback string) string {
	if x.req.Model != "" {
		return x.req.Model
	}
	return fallback
}

// toolCall is the tool the answer calls.
type toolCall struct {
	name string
	args string // JSON object
}

// toolCall decides whether the answer is a tool call: the request offers
// tools and either carries x-sim-tool: 1 or its last turn is a user
// message whose text says "use the tool". Looking at the last turn only
// means a tool result coming back gets a text answer, so a real agent
// loop ends.
func (x *exchange) toolCall() *toolCall {
	if !x.toolKnown {
		x.tool, x.toolKnown = x.findTool(), true
	}
	return x.tool
}

func (x *exchange) findTool() *toolCall {
	if x.provider == Google {
		return x.googleTool()
	}
	if len(x.req.Tools) == 0 {
		return nil
	}
	if x.r.Header.Get("x-sim-tool") != "1" &&
		!strings.Contains(strings.ToLower(lastUserText(x.req)), "use the tool") {
		return nil
	}
	for _, raw := range x.req.Tools {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"` // anthropic
			Parameters  json.RawMessage `json:"parameters"`   // responses
			Function    *struct {       // chat completions
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		name, schema := t.Name, t.InputSchema
		if schema == nil {
			schema = t.Parameters
		}
		if t.Function != nil && t.Function.Name != "" {
			name, schema = t.Function.Name, t.Function.Parameters
		}
		if name != "" {
			return &toolCall{name: name, args: argsFor(schema)}
		}
	}
	return nil
}

// argsFor fills the schema's required properties with placeholder values
// of the right type (an enum's first value), so a client that validates
// tool input accepts it. Types may be Gemini's upper-case ones ("OBJECT").
func argsFor(schema json.RawMessage) string {
	var sc struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &sc)
	args := map[string]any{}
	req := append([]string(nil), sc.Required...)
	sort.Strings(req)
	for _, name := range req {
		prop := sc.Properties[name]
		typ, _ := prop.Type.(string)
		if len(prop.Enum) > 0 {
			args[name] = prop.Enum[0]
			continue
		}
		switch strings.ToLower(typ) {
		case "integer", "number":
			args[name] = 1
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			args[name] = "sim"
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// lastUserText is the text of the conversation's last turn when that turn
// is a user message; "" otherwise (a tool result, an assistant turn).
// The three APIs share enough shape for one reader: Messages and Chat
// Completions use "messages", Responses uses "input" (a string, or items).
func lastUserText(r request) string {
	turns := r.Messages
	if len(turns) == 0 {
		turns = r.Input
	}
	var s string
	if json.Unmarshal(turns, &s) == nil {
		return s
	}
	var items []struct {
		Role    string          `json:"role"`
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(turns, &items) != nil || len(items) == 0 {
		return ""
	}
	// Skip trailing system and developer messages: Claude Code appends a
	// "system" message after the user's turn.
	i := len(items) - 1
	for i > 0 && (items[i].Role == "system" || items[i].Role == "developer") {
		i--
	}
	last := items[i]
	if last.Role != "user" || (last.Type != "" && last.Type != "message") {
		return ""
	}
	if json.Unmarshal(last.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(last.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text":
			b.WriteString(p.Text)
		case "tool_result", "function_call_output":
			return ""
		}
	}
	return b.String()
}

// split cuts s into at most n pieces on rune boundaries, the way
// upstreams stream tool arguments in fragments.
func split(s string, n int) []string {
	n = max(min(n, utf8.RuneCountInString(s)), 1)
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}
