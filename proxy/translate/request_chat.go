package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

type chatIn struct {
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string       `json:"type"`
		Function cFunctionDef `json:"function"`
	} `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	User                string          `json:"user"`
	SafetyIdentifier    string          `json:"safety_identifier"`
	N                   *int            `json:"n"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         int             `json:"top_logprobs"`
	Modalities          []string        `json:"modalities"`
	ReasoningEffort     string          `json:"reasoning_effort"` // carried to Gemini and Responses only (fields.go)
	Seed                *int            `json:"seed"`             // to Gemini only
	Verbosity           string          `json:"verbosity"`        // to Responses only
	PromptCacheKey      string          `json:"prompt_cache_key"` // likewise
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []cToolCall     `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// readChat reads a Chat Completions request into the neutral form.
// System and developer messages are hoisted into the system prompt in
// order: Anthropic has no system turns.
func (c *conv) readChat(body []byte) (*request, error) {
	if _, err := c.checkFields(body, chatFields); err != nil {
		return nil, err
	}
	var in chatIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: chat request body: %w", err)
	}
	if err := c.chatUnsupported(&in); err != nil {
		return nil, err
	}

	r := &request{stream: in.Stream, temperature: in.Temperature, topP: in.TopP, user: in.User, stopField: "stop",
		effort: in.ReasoningEffort, seed: in.Seed, verbosity: in.Verbosity, cacheKey: in.PromptCacheKey}
	var err error
	if r.format, err = c.chatFormat(in.ResponseFormat); err != nil {
		return nil, err
	}
	if r.user == "" {
		r.user = in.SafetyIdentifier
	}
	r.maxTokens, r.maxField = in.MaxCompletionTokens, "max_completion_tokens"
	if r.maxTokens == nil {
		r.maxTokens, r.maxField = in.MaxTokens, "max_tokens"
	}
	if !isNull(in.Stop) {
		if isString(in.Stop) {
			var s string
			_ = json.Unmarshal(in.Stop, &s)
			r.stop = []string{s}
		} else if err := json.Unmarshal(in.Stop, &r.stop); err != nil {
			return nil, fmt.Errorf("translate: stop: %w", err)
		}
	}

	for i, m := range in.Messages {
		if err := c.chatMessage(r, path("messages", i), m); err != nil {
			return nil, err
		}
	}

	for i, t := range in.Tools {
		if t.Type != "function" {
			return nil, c.refuse(path("tools", i), "tool type %q", t.Type)
		}
		r.tools = append(r.tools, tool{name: t.Function.Name, description: t.Function.Description, schema: t.Function.Parameters,
			strict: t.Function.Strict})
	}
	err = c.openAIToolChoice(r, in.ToolChoice, in.ParallelToolCalls, func(raw json.RawMessage) (string, string, error) {
		var n cNamedChoice
		err := json.Unmarshal(raw, &n)
		return n.Type, n.Function.Name, err
	})
	if err != nil {
		return nil, err
	}
	if r.endsWithAssistant() {
		return nil, c.refuse(path("messages", len(in.Messages)-1), endsWithAssistant, name(c.to))
	}
	return r, nil
}

// chatUnsupported refuses the options Claude has no answer for.
func (c *conv) chatUnsupported(in *chatIn) error {
	switch {
	case in.N != nil && *in.N > 1:
		return c.refuse("n", "%d choices; a translated turn carries one", *in.N)
	case in.Logprobs || in.TopLogprobs > 0:
		return c.refuse("logprobs", "log probabilities are not translated")
	}
	for _, m := range in.Modalities {
		if m != "text" {
			return c.refuse("modalities", "output modality %q", m)
		}
	}
	return nil
}

// chatMessage adds one message, at field, to r.
func (c *conv) chatMessage(r *request, field string, m chatMessage) error {
	switch m.Role {
	case "system", "developer":
		texts, err := c.contentTexts(m.Content, field, m.Role, "text")
		if err != nil {
			return err
		}
		r.system = append(r.system, strings.Join(texts, "\n"))
	case "user", "assistant":
		parts, err := c.chatContent(m.Role, m.Content, field+".content")
		if err != nil {
			return err
		}
		for j, tc := range m.ToolCalls {
			if m.Role != "assistant" || (tc.Type != "" && tc.Type != "function") {
				return c.refuse(path(field+".tool_calls", j), "tool call type %q", tc.Type)
			}
			parts = append(parts, part{kind: callPart, call: toolCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments}})
		}
		r.addTurn(m.Role, parts...)
	case "tool":
		texts, err := c.contentTexts(m.Content, field, "tool", "text")
		if err != nil {
			return err
		}
		res := toolResult{id: m.ToolCallID}
		if s := strings.Join(texts, ""); s != "" {
			res.parts = []part{text(s)}
		}
		r.addTurn("user", part{kind: resultPart, res: res})
	case "function":
		return c.refuse(field, "legacy function messages; use tool messages")
	default:
		return fmt.Errorf("translate: %s: unknown role %q", field, m.Role)
	}
	return nil
}

// openAIToolChoice reads tool_choice ("auto" | "none" | "required" or a
// named choice) and parallel_tool_calls into r. named reads a named
// choice's type and function name, since its shape differs between the two
// OpenAI wires; a type other than "function" is refused.
func (c *conv) openAIToolChoice(r *request, raw json.RawMessage, parallel *bool, named func(json.RawMessage) (typ, name string, err error)) error {
	r.noParallel = parallel != nil && !*parallel
	if isNull(raw) {
		return nil
	}
	if isString(raw) {
		var s string
		_ = json.Unmarshal(raw, &s)
		switch s {
		case "auto", "none":
			r.toolChoice = &toolChoice{mode: s}
			return nil
		case "required":
			r.toolChoice = &toolChoice{mode: "any"}
			return nil
		}
		return c.refuse("tool_choice", "%q", s)
	}
	typ, name, err := named(raw)
	if typ != "function" {
		return c.refuse("tool_choice", "type %q", typ)
	}
	if err != nil {
		return err
	}
	r.toolChoice = &toolChoice{mode: "tool", name: name}
	return nil
}

func (c *conv) chatContent(role string, raw json.RawMessage, field string) ([]part, error) {
	if isNull(raw) {
		return nil, nil
	}
	if isString(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("translate: %s: %w", field, err)
		}
		return []part{text(s)}, nil
	}
	var ps []cPart
	if err := json.Unmarshal(raw, &ps); err != nil {
		return nil, fmt.Errorf("translate: %s: %w", field, err)
	}
	var parts []part
	for j, p := range ps {
		pf := path(field, j)
		switch {
		case p.Type == "text":
			parts = append(parts, text(p.Text))
		case p.Type == "refusal" && role == "assistant":
			parts = append(parts, text(p.Refusal))
		case p.Type == "image_url" && role == "user" && p.ImageURL != nil:
			im, ok := imageFromURL(p.ImageURL.URL)
			if !ok {
				return nil, c.refuse(pf+".image_url.url", "neither a data: URL nor a web address")
			}
			im.detail = p.ImageURL.Detail
			parts = append(parts, part{kind: imagePart, img: im})
		default:
			return nil, c.refuse(pf, "%s content part type %q has no equivalent", role, p.Type)
		}
	}
	return parts, nil
}

// writeChat writes the neutral form as a Chat Completions request.
func (c *conv) writeChat(r *request, model string) ([]byte, error) {
	out := cRequest{Model: model, Stream: r.stream, User: openAIUser(r.user), Seed: r.seed}
	if r.stream {
		// Usage comes only in a last chunk, and only when asked for;
		// Claude Code needs it for message_delta.
		out.StreamOptions = &cStreamOptions{IncludeUsage: true}
	}
	c.openAISampling(r, model, reasoningModel(model), &out.Temperature, &out.TopP)
	if reasoningModel(model) {
		out.ReasoningEffort = r.effort
		out.MaxCompletionTokens = r.maxTokens
		out.Verbosity = r.verbosity
	} else {
		out.MaxTokens = r.maxTokens // what OpenAI-compatible servers know
		if r.verbosity != "" {
			c.note("text.verbosity", "dropped: %s takes no verbosity", model)
		}
	}
	out.ResponseFormat = chatResponseFormat(r.format)
	if len(r.stop) > 4 {
		return nil, c.refuse(r.stopField, "%d stop sequences; Chat Completions takes at most 4", len(r.stop))
	}
	if len(r.stop) > 0 {
		out.Stop = marshal(r.stop)
	}

	if len(r.system) > 0 {
		out.Messages = append(out.Messages, cMessage{Role: "system", Content: marshal(strings.Join(r.system, "\n\n"))})
	}
	for _, t := range r.turns {
		msgs, err := c.chatMessages(t)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, msgs...)
	}

	for _, t := range r.tools {
		def := cFunctionDef{Name: t.name, Description: t.description, Parameters: t.schema}
		if t.strict != nil && *t.strict {
			def.Strict = t.strict // false is Chat's default, and not every compatible server knows the field
		}
		out.Tools = append(out.Tools, cTool{Type: "function", Function: def})
	}
	if tc := r.toolChoice; tc != nil && len(r.tools) > 0 {
		switch tc.mode {
		case "auto", "none":
			out.ToolChoice = tc.mode
		case "any":
			out.ToolChoice = "required"
		case "tool":
			n := cNamedChoice{Type: "function"}
			n.Function.Name = tc.name
			out.ToolChoice = n
		}
	}
	if r.noParallel && len(r.tools) > 0 {
		f := false
		out.ParallelToolCalls = &f
	}
	return marshal(out), nil
}

// openAISampling sets temperature and top_p, or drops them for reasoning
// models, which refuse anything but the default; it also notes a
// reasoning effort the model cannot take.
func (c *conv) openAISampling(r *request, model string, reasoning bool, temp, topP **float64) {
	if !reasoning {
		*temp, *topP = r.temperature, r.topP
		if r.effort != "" {
			c.note(c.thinkingField(), "dropped: %s takes no reasoning effort", model)
		}
		return
	}
	if r.temperature != nil {
		c.note("temperature", "dropped: %s takes only the default", model)
	}
	if r.topP != nil {
		c.note("top_p", "dropped: %s takes only the default", model)
	}
}

// openAIUser carries metadata.user_id. OpenAI caps end-user ids at 64
// characters and Claude Code's is a longer JSON string, so a long one is
// replaced by its hash: still one stable id per user and session.
func openAIUser(id string) string {
	if len(id) <= 64 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])[:48]
}

// toolError marks a failed tool's output: OpenAI tool results have no
// error flag, and the model should still know the call failed.
func toolError(s string) string { return "Error: " + s }

// chatMessages writes one turn. A user turn's tool results become tool
// messages first (they must follow the assistant's tool calls); images a
// tool returned go into the user message after them, since tool messages
// carry text only.
func (c *conv) chatMessages(t turn) ([]cMessage, error) {
	if t.role == "assistant" {
		var texts []string
		var calls []cToolCall
		for _, p := range t.parts {
			switch p.kind {
			case textPart:
				texts = append(texts, p.text)
			case callPart:
				calls = append(calls, cToolCall{ID: openAIToolID(p.call.id), Type: "function",
					Function: cFunction{Name: p.call.name, Arguments: compactArgs(p.call.args)}})
			default:
				return nil, c.refuse("assistant turn", "an image in an assistant turn")
			}
		}
		m := cMessage{Role: "assistant", ToolCalls: calls}
		if len(texts) > 0 {
			m.Content = marshal(strings.Join(texts, "\n\n"))
		}
		return []cMessage{m}, nil
	}

	var msgs []cMessage
	var user, toolImages []cPart
	for _, p := range t.parts {
		switch p.kind {
		case textPart:
			user = append(user, cPart{Type: "text", Text: p.text})
		case imagePart:
			user = append(user, cPart{Type: "image_url", ImageURL: &cImageURL{URL: p.img.urlString(), Detail: p.img.detail}})
		case resultPart:
			id := openAIToolID(p.res.id)
			var texts []string
			var images []cPart
			for _, rp := range p.res.parts {
				if rp.kind == imagePart {
					images = append(images, cPart{Type: "image_url", ImageURL: &cImageURL{URL: rp.img.urlString(), Detail: rp.img.detail}})
				} else {
					texts = append(texts, rp.text)
				}
			}
			s := strings.Join(texts, "")
			if len(images) > 0 {
				if s != "" {
					s += "\n"
				}
				s += fmt.Sprintf("[%d image(s) of this result follow in the next user message]", len(images))
				toolImages = append(toolImages, cPart{Type: "text", Text: "Images returned by tool call " + id + ":"})
				toolImages = append(toolImages, images...)
			}
			if p.res.isError {
				s = toolError(s)
			}
			msgs = append(msgs, cMessage{Role: "tool", ToolCallID: id, Content: marshal(s)})
		case callPart:
			return nil, c.refuse("user turn", "a tool call in a user turn")
		}
	}
	user = append(toolImages, user...)
	switch {
	case len(user) == 1 && user[0].Type == "text":
		msgs = append(msgs, cMessage{Role: "user", Content: marshal(user[0].Text)})
	case len(user) > 0:
		msgs = append(msgs, cMessage{Role: "user", Content: marshal(user)})
	}
	return msgs, nil
}

// compactArgs gives tool arguments as OpenAI sends them: compact JSON.
func compactArgs(args string) string {
	if in, ok := argsObject(args); ok {
		return string(in)
	}
	return args
}
