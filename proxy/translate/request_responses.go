package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

type responsesIn struct {
	Input        json.RawMessage `json:"input"`
	Instructions json.RawMessage `json:"instructions"`
	Tools        []struct {
		rTool
		Format json.RawMessage `json:"format"`
		Tools  []rTool         `json:"tools"` // a namespace's
	} `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	Stream            bool            `json:"stream"`
	User              string          `json:"user"`
	SafetyIdentifier  string          `json:"safety_identifier"`
	Text              *rText          `json:"text"`
	TopLogprobs       int             `json:"top_logprobs"`
	Reasoning         *rReasoning     `json:"reasoning"`        // carried to Gemini and Chat only (fields.go)
	PromptCacheKey    string          `json:"prompt_cache_key"` // dropped by every writer but Responses'
}

// readResponses reads a Responses request into the neutral form.
// Reasoning items from earlier turns are dropped: their encrypted content
// only OpenAI can read.
func (c *conv) readResponses(body []byte) (*request, error) {
	if _, err := c.checkFields(body, responsesFields); err != nil {
		return nil, err
	}
	var in responsesIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: responses request body: %w", err)
	}
	if in.TopLogprobs > 0 {
		return nil, c.refuse("top_logprobs", "log probabilities are not translated")
	}

	r := &request{stream: in.Stream, temperature: in.Temperature, topP: in.TopP, maxTokens: in.MaxOutputTokens, user: in.User,
		cacheKey: in.PromptCacheKey, maxField: "max_output_tokens"}
	if err := c.responsesText(r, in.Text); err != nil {
		return nil, err
	}
	if in.Reasoning != nil {
		r.effort = in.Reasoning.Effort
	}
	if r.user == "" {
		r.user = in.SafetyIdentifier
	}

	if isString(in.Instructions) {
		var s string
		_ = json.Unmarshal(in.Instructions, &s)
		if s != "" {
			r.system = append(r.system, s)
		}
	} else if !isNull(in.Instructions) {
		if err := c.responsesItems(r, in.Instructions, "instructions"); err != nil {
			return nil, err
		}
	}
	if isString(in.Input) {
		var s string
		_ = json.Unmarshal(in.Input, &s)
		r.addTurn("user", text(s))
	} else if err := c.responsesItems(r, in.Input, "input"); err != nil {
		return nil, err
	}

	for i, t := range in.Tools {
		if err := c.responsesTool(r, path("tools", i), t.rTool, t.Tools); err != nil {
			return nil, err
		}
	}
	err := c.openAIToolChoice(r, in.ToolChoice, in.ParallelToolCalls, func(raw json.RawMessage) (string, string, error) {
		var n rNamedChoice
		err := json.Unmarshal(raw, &n)
		return n.Type, n.Name, err
	})
	if err != nil {
		return nil, err
	}
	if r.endsWithAssistant() {
		return nil, c.refuse("input", endsWithAssistant, name(c.to))
	}
	return r, nil
}

// responsesTool reads one tool, at field. A namespace's function tools
// are offered by their flat names (nsName), which the answer's calls are
// mapped back from (AnswerOptions). Hosted web search, which Codex CLI
// offers on every turn, is dropped with a note: the request means the
// same, the model answers without searching. custom (free-form) tools,
// local_shell and the other hosted tools (file_search,
// code_interpreter, mcp…) have no equivalent another model could call
// the same way.
func (c *conv) responsesTool(r *request, field string, t rTool, inner []rTool) error {
	switch t.Type {
	case "function":
		r.tools = append(r.tools, tool{name: t.Name, description: t.Description, schema: t.Parameters, strict: t.Strict})
	case "namespace":
		for j, f := range inner {
			if f.Type != "function" {
				return c.refuse(path(field+".tools", j), "tool type %q has no equivalent", f.Type)
			}
			r.tools = append(r.tools, tool{name: nsName(t.Name, f.Name), description: f.Description, schema: f.Parameters, strict: f.Strict})
		}
	case "web_search", "web_search_preview":
		c.note(field, "dropped: web search is a tool the Responses API runs itself; the model answers without it")
	default:
		return c.refuse(field, "tool type %q has no equivalent", t.Type)
	}
	return nil
}

func (c *conv) responsesItems(r *request, raw json.RawMessage, base string) error {
	var items []rItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("translate: %s: %w", base, err)
	}
	for i, it := range items {
		field := path(base, i)
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message" // the "easy" message form has no type
		}
		switch typ {
		case "message":
			if err := c.responsesMessage(r, it, field); err != nil {
				return err
			}
		case "function_call":
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			r.addTurn("assistant", part{kind: callPart, call: toolCall{id: it.CallID, name: nsName(it.Namespace, it.Name), args: args}})
		case "function_call_output":
			res, err := c.responsesOutput(it, field)
			if err != nil {
				return err
			}
			r.addTurn("user", part{kind: resultPart, res: res})
		case "reasoning":
		case "item_reference":
			return c.refuse(field, "item references point at items stored at OpenAI")
		default:
			return c.refuse(field, "input item type %q has no equivalent", typ)
		}
	}
	return nil
}

func (c *conv) responsesMessage(r *request, it rItem, field string) error {
	switch it.Role {
	case "system", "developer":
		texts, err := c.contentTexts(it.Content, field, it.Role, "input_text")
		if err != nil {
			return err
		}
		r.system = append(r.system, strings.Join(texts, "\n"))
		return nil
	case "user", "assistant":
	default:
		return fmt.Errorf("translate: %s: unknown role %q", field, it.Role)
	}
	if isString(it.Content) {
		var s string
		_ = json.Unmarshal(it.Content, &s)
		r.addTurn(it.Role, text(s))
		return nil
	}
	var ps []rPart
	if err := json.Unmarshal(it.Content, &ps); err != nil {
		return fmt.Errorf("translate: %s.content: %w", field, err)
	}
	parts, err := c.responsesParts(it.Role, ps, field+".content")
	if err != nil {
		return err
	}
	r.addTurn(it.Role, parts...)
	return nil
}

func (c *conv) responsesParts(role string, ps []rPart, field string) ([]part, error) {
	var parts []part
	for j, p := range ps {
		pf := path(field, j)
		switch {
		case p.Type == "input_text" || p.Type == "output_text":
			parts = append(parts, text(p.Text))
		case p.Type == "refusal":
			parts = append(parts, text(p.Refusal))
		case p.Type == "input_image" && role == "user":
			if p.ImageURL == "" {
				return nil, c.refuse(pf, "an image by file_id lives at OpenAI")
			}
			im, ok := imageFromURL(p.ImageURL)
			if !ok {
				return nil, c.refuse(pf+".image_url", "neither a data: URL nor a web address")
			}
			im.detail = p.Detail
			parts = append(parts, part{kind: imagePart, img: im})
		default:
			return nil, c.refuse(pf, "%s content part type %q has no equivalent", role, p.Type)
		}
	}
	return parts, nil
}

func (c *conv) responsesOutput(it rItem, field string) (toolResult, error) {
	res := toolResult{id: it.CallID}
	if isNull(it.Output) {
		return res, nil
	}
	if isString(it.Output) {
		var s string
		_ = json.Unmarshal(it.Output, &s)
		if s != "" {
			res.parts = []part{text(s)}
		}
		return res, nil
	}
	var ps []rPart
	if err := json.Unmarshal(it.Output, &ps); err != nil {
		return res, fmt.Errorf("translate: %s.output: %w", field, err)
	}
	parts, err := c.responsesParts("user", ps, field+".output")
	res.parts = parts
	return res, err
}

// writeResponses writes the neutral form as a Responses request; codex
// shapes it for the ChatGPT Codex backend.
func (c *conv) writeResponses(r *request, model string, codex bool) ([]byte, error) {
	if len(r.stop) > 0 {
		return nil, c.refuse(r.stopField, "the Responses API has no stop sequences")
	}
	// store:false keeps the detour from leaving a copy of the
	// conversation in the user's OpenAI account; every turn carries the
	// whole history anyway. (The Codex backend insists on it.)
	no := false
	out := rRequest{Model: model, Stream: r.stream, Store: &no, User: openAIUser(r.user), PromptCacheKey: r.cacheKey,
		Instructions: strings.Join(r.system, "\n\n"), MaxOutputTokens: r.maxTokens, Input: []rItem{}}
	reasoning := reasoningModel(model)
	if codex {
		c.codexShape(r, &out)
		reasoning = true // the backend serves reasoning models only
	}
	c.openAISampling(r, model, reasoning, &out.Temperature, &out.TopP)
	if reasoning && r.effort != "" {
		out.Reasoning = &rReasoning{Effort: r.effort}
	}
	out.Text = c.responsesTextOut(r, model, reasoning)

	for _, t := range r.turns {
		items, err := c.responsesInput(t)
		if err != nil {
			return nil, err
		}
		out.Input = append(out.Input, items...)
	}

	for _, t := range r.tools {
		schema := t.schema
		if isNull(schema) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		// Responses makes function tools strict unless told otherwise,
		// and strict mode refuses most hand-written schemas.
		strict := t.strict
		if strict == nil {
			strict = &no
		}
		out.Tools = append(out.Tools, rTool{Type: "function", Name: t.name, Description: t.description, Parameters: schema, Strict: strict})
	}
	if tc := r.toolChoice; tc != nil && len(r.tools) > 0 {
		switch tc.mode {
		case "auto", "none":
			out.ToolChoice = tc.mode
		case "any":
			out.ToolChoice = "required"
		case "tool":
			out.ToolChoice = rNamedChoice{Type: "function", Name: tc.name}
		}
	}
	if r.noParallel && len(r.tools) > 0 {
		out.ParallelToolCalls = &no
	}
	return marshal(out), nil
}

// codexShape bends a Responses request into what the ChatGPT Codex
// backend accepts, which is what Codex CLI sends: it answers 400 to
// max_output_tokens, to stream false and to missing instructions, and
// takes no end-user id (the id still serves as the cache key, which is
// what Codex CLI sends in its place).
func (c *conv) codexShape(r *request, out *rRequest) {
	if r.maxTokens != nil {
		c.note(r.maxField, "dropped: the ChatGPT backend takes no output cap")
		out.MaxOutputTokens = nil
	}
	if !r.stream {
		c.note("stream", "%s", forcedStream)
		out.Stream = true
	}
	if out.Instructions == "" {
		c.note("system", "none given; the ChatGPT backend requires instructions, so a neutral one is sent")
		out.Instructions = neutralInstructions
	}
	if out.PromptCacheKey == "" {
		out.PromptCacheKey = out.User
	}
	out.User = ""
}

// responsesInput writes one turn as input items, keeping the order of
// text and tool calls within an assistant turn; a user turn's tool
// outputs go first, as they answer the turn before.
func (c *conv) responsesInput(t turn) ([]rItem, error) {
	var items []rItem
	if t.role == "assistant" {
		var texts []string
		flush := func() {
			if len(texts) > 0 {
				items = append(items, rItem{Type: "message", Role: "assistant", Content: marshal(strings.Join(texts, "\n\n"))})
				texts = nil
			}
		}
		for _, p := range t.parts {
			switch p.kind {
			case textPart:
				texts = append(texts, p.text)
			case callPart:
				flush()
				args := compactArgs(p.call.args)
				items = append(items, rItem{Type: "function_call", CallID: openAIToolID(p.call.id), Name: p.call.name, Arguments: &args})
			default:
				return nil, c.refuse("assistant turn", "an image in an assistant turn")
			}
		}
		flush()
		return items, nil
	}

	var user []rPart
	for _, p := range t.parts {
		switch p.kind {
		case textPart:
			user = append(user, rPart{Type: "input_text", Text: p.text})
		case imagePart:
			user = append(user, rPart{Type: "input_image", ImageURL: p.img.urlString(), Detail: p.img.responsesDetail()})
		case resultPart:
			items = append(items, rItem{Type: "function_call_output", CallID: openAIToolID(p.res.id), Output: responsesToolOutput(p.res)})
		case callPart:
			return nil, c.refuse("user turn", "a tool call in a user turn")
		}
	}
	if len(user) > 0 {
		items = append(items, rItem{Type: "message", Role: "user", Content: marshal(user)})
	}
	return items, nil
}

// responsesToolOutput is a string when the result is text, else a list
// of input parts (function_call_output takes images, unlike Chat's tool
// messages).
func responsesToolOutput(res toolResult) json.RawMessage {
	var texts []string
	var ps []rPart
	images := false
	for _, p := range res.parts {
		if p.kind == imagePart {
			images = true
			ps = append(ps, rPart{Type: "input_image", ImageURL: p.img.urlString(), Detail: p.img.responsesDetail()})
		} else {
			texts = append(texts, p.text)
			ps = append(ps, rPart{Type: "input_text", Text: p.text})
		}
	}
	if !images {
		s := strings.Join(texts, "")
		if res.isError {
			s = toolError(s)
		}
		return marshal(s)
	}
	if res.isError {
		ps = append([]rPart{{Type: "input_text", Text: toolError("")}}, ps...)
	}
	return marshal(ps)
}
