package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// readAnthropic reads a Messages request into the neutral form.
func (c *conv) readAnthropic(body []byte) (*request, error) {
	if _, err := c.checkFields(body, anthropicFields); err != nil {
		return nil, err
	}
	var in aRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: anthropic request body: %w", err)
	}
	r := &request{stream: in.Stream, temperature: in.Temperature, topP: in.TopP, topK: in.TopK, stop: in.StopSequences, stopField: "stop_sequences"}
	if in.MaxTokens > 0 {
		r.maxTokens, r.maxField = &in.MaxTokens, "max_tokens"
	}
	if in.Metadata != nil {
		r.user = in.Metadata.UserID
	}

	sys, err := c.anthropicSystem(in.System)
	if err != nil {
		return nil, err
	}
	r.system = sys

	if err := c.anthropicMessages(r, in.Messages); err != nil {
		return nil, err
	}

	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, c.refuse(path("tools", i), "tool type %q runs on Anthropic's side (server or Anthropic-defined tool)", t.Type)
		}
		r.tools = append(r.tools, tool{name: t.Name, description: t.Description, schema: t.InputSchema})
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none", "tool":
		default:
			return nil, c.refuse("tool_choice", "type %q", tc.Type)
		}
		r.toolChoice = &toolChoice{mode: tc.Type, name: tc.Name}
		r.noParallel = tc.DisableParallelToolUse
	}

	if oc := in.OutputConfig; oc != nil && !isNull(oc.Format) {
		return nil, c.refuse("output_config.format", "structured output formats are not translated")
	}
	if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == "assistant" {
		return nil, c.refuse(path("messages", n-1), "a final assistant message is a prefill for Claude to continue; %s models cannot continue a message", name(c.to))
	}
	r.effort = effortFromThinking(in.Thinking, in.OutputConfig)
	if th := in.Thinking; th != nil && th.Type == "enabled" {
		r.budget = th.BudgetTokens
	}
	// Adaptive thinking without an effort is what Gemini does unasked
	// (a dynamic budget), so only an OpenAI target loses anything.
	if r.effort == "" && in.Thinking != nil && in.Thinking.Type != "disabled" && !c.toGemini() {
		c.note("thinking", "dropped: no reasoning effort could be derived from type %q", in.Thinking.Type)
	}
	return r, nil
}

// anthropicMessages adds the conversation's messages to r as turns.
func (c *conv) anthropicMessages(r *request, msgs []aMessage) error {
	for i, m := range msgs {
		field := path("messages", i)
		if m.Role == "system" {
			// Claude Code puts system messages mid-conversation for a
			// model it does not know (beta mid-conversation-system-…); for
			// the models it knows it sends the same text in a user turn,
			// and so does this translation: OpenAI's APIs give a late
			// system message no reliable meaning.
			texts, err := c.anthropicSystem(m.Content)
			if err != nil {
				return fmt.Errorf("translate: %s: %w", field, err)
			}
			c.note(field, "a system message inside the conversation is sent as a user message")
			for _, t := range texts {
				r.addTurn("user", text(t))
			}
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("translate: %s: role %q is not user or assistant", field, m.Role)
		}
		parts, err := c.anthropicContent(m.Role, m.Content, field+".content")
		if err != nil {
			return err
		}
		r.addTurn(m.Role, parts...)
	}
	return nil
}

func (c *conv) anthropicSystem(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	if isString(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("translate: system: %w", err)
		}
		return []string{s}, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("translate: system: %w", err)
	}
	var out []string
	for i, b := range blocks {
		if b.Type != "text" {
			return nil, c.refuse(path("system", i), "system block type %q", b.Type)
		}
		out = append(out, b.Text)
	}
	return out, nil
}

// anthropicContent reads a message's content: a string or blocks.
// thinking and redacted_thinking blocks are dropped: their signatures
// only Anthropic can check, and Anthropic itself ignores thinking from
// earlier turns.
func (c *conv) anthropicContent(role string, raw json.RawMessage, field string) ([]part, error) {
	if isString(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("translate: %s: %w", field, err)
		}
		return []part{text(s)}, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("translate: %s: %w", field, err)
	}
	var parts []part
	for j, b := range blocks {
		bf := path(field, j)
		switch {
		case b.Type == "text":
			if b.Text != "" {
				parts = append(parts, text(b.Text))
			}
		case b.Type == "image":
			im, err := c.anthropicImage(b.Source, bf)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part{kind: imagePart, img: im})
		case b.Type == "tool_use" && role == "assistant":
			args := "{}"
			if !isNull(b.Input) {
				args = string(b.Input)
			}
			parts = append(parts, part{kind: callPart, call: toolCall{id: b.ID, name: b.Name, args: args}})
		case b.Type == "tool_result" && role == "user":
			res, err := c.anthropicToolResult(b, bf)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part{kind: resultPart, res: res})
		case b.Type == "thinking" || b.Type == "redacted_thinking":
		default:
			return nil, c.refuse(bf, "%s block type %q has no equivalent", role, b.Type)
		}
	}
	return parts, nil
}

func (c *conv) anthropicImage(src *aSource, field string) (image, error) {
	switch {
	case src == nil:
		return image{}, fmt.Errorf("translate: %s: image without source", field)
	case src.Type == "base64":
		return image{mediaType: src.MediaType, data: src.Data}, nil
	case src.Type == "url":
		return image{url: src.URL}, nil
	}
	return image{}, c.refuse(field+".source", "image source type %q (files live at Anthropic)", src.Type)
}

func (c *conv) anthropicToolResult(b aBlock, field string) (toolResult, error) {
	res := toolResult{id: b.ToolUseID, isError: b.IsError}
	if isNull(b.Content) {
		return res, nil
	}
	if isString(b.Content) {
		var s string
		if err := json.Unmarshal(b.Content, &s); err != nil {
			return res, fmt.Errorf("translate: %s.content: %w", field, err)
		}
		res.parts = []part{text(s)}
		return res, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(b.Content, &blocks); err != nil {
		return res, fmt.Errorf("translate: %s.content: %w", field, err)
	}
	for k, rb := range blocks {
		rf := path(field+".content", k)
		switch rb.Type {
		case "text":
			res.parts = append(res.parts, text(rb.Text))
		case "image":
			im, err := c.anthropicImage(rb.Source, rf)
			if err != nil {
				return res, err
			}
			res.parts = append(res.parts, part{kind: imagePart, img: im})
		default:
			return res, c.refuse(rf, "tool result block type %q has no equivalent", rb.Type)
		}
	}
	return res, nil
}

// writeAnthropic writes the neutral form as a Messages request.
func (c *conv) writeAnthropic(r *request, model string) ([]byte, error) {
	out := aRequest{Model: model, Stream: r.stream, Temperature: r.temperature, TopP: r.topP, TopK: r.topK, StopSequences: r.stop}
	out.MaxTokens = DefaultMaxTokens
	if r.maxTokens != nil {
		out.MaxTokens = *r.maxTokens
	}
	if out.Temperature != nil && *out.Temperature > 1 {
		c.note("temperature", "%g clamped to 1, Claude's maximum", *out.Temperature)
		one := 1.0
		out.Temperature = &one
	}
	if out.Temperature != nil && out.TopP != nil {
		// Current Claude models refuse both at once.
		c.note("top_p", "dropped: Claude takes temperature or top_p, not both")
		out.TopP = nil
	}
	if r.user != "" {
		out.Metadata = &aMetadata{UserID: r.user}
	}

	var system []aBlock
	for _, s := range r.system {
		if s != "" { // Anthropic refuses empty text blocks here too
			system = append(system, aBlock{Type: "text", Text: s})
		}
	}
	switch len(system) {
	case 0:
	case 1:
		out.System = marshal(system[0].Text)
	default:
		out.System = marshal(system)
	}

	type msg struct {
		role   string
		blocks []aBlock
	}
	var msgs []msg
	for _, t := range r.turns {
		blocks, err := c.anthropicBlocks(t)
		if err != nil {
			return nil, err
		}
		switch n := len(msgs); {
		case len(blocks) == 0:
			// Anthropic refuses empty messages; the turns around may merge.
		case n > 0 && msgs[n-1].role == t.role:
			msgs[n-1].blocks = append(msgs[n-1].blocks, blocks...)
		default:
			msgs = append(msgs, msg{t.role, blocks})
		}
	}
	for _, m := range msgs {
		out.Messages = append(out.Messages, aMessage{Role: m.role, Content: marshal(m.blocks)})
	}

	for _, t := range r.tools {
		schema := t.schema
		if isNull(schema) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, aTool{Name: t.name, Description: t.description, InputSchema: schema})
	}
	if tc := r.toolChoice; len(r.tools) > 0 && (tc != nil || r.noParallel) {
		choice := &aToolChoice{Type: "auto"}
		if tc != nil {
			choice = &aToolChoice{Type: tc.mode, Name: tc.name}
		}
		choice.DisableParallelToolUse = r.noParallel && choice.Type != "none"
		out.ToolChoice = choice
	}
	return marshal(out), nil
}

// DefaultMaxTokens is the max_tokens of a translated request whose
// client set no limit (Anthropic requires one, OpenAI does not). Every
// current Claude model allows at least this much output, and only what
// is generated is billed, so a generous cap costs nothing; a cap too low
// would cut long edits short.
const DefaultMaxTokens = 32000

// anthropicBlocks writes one turn; in a user turn, tool results go first
// as Anthropic requires.
func (c *conv) anthropicBlocks(t turn) ([]aBlock, error) {
	var results, rest []aBlock
	for _, p := range t.parts {
		switch p.kind {
		case textPart:
			if p.text != "" { // Anthropic refuses empty text blocks
				rest = append(rest, aBlock{Type: "text", Text: p.text})
			}
		case imagePart:
			rest = append(rest, anthropicImageBlock(p.img))
		case callPart:
			input, ok := argsObject(p.call.args)
			if !ok {
				return nil, c.refuse("tool call "+p.call.id, "arguments are not a JSON object: %.80q", p.call.args)
			}
			rest = append(rest, aBlock{Type: "tool_use", ID: anthropicToolID(p.call.id), Name: p.call.name, Input: input})
		case resultPart:
			results = append(results, anthropicResultBlock(p.res))
		}
	}
	return append(results, rest...), nil
}

func anthropicImageBlock(im image) aBlock {
	if im.url != "" {
		return aBlock{Type: "image", Source: &aSource{Type: "url", URL: im.url}}
	}
	return aBlock{Type: "image", Source: &aSource{Type: "base64", MediaType: im.mediaType, Data: im.data}}
}

func anthropicResultBlock(res toolResult) aBlock {
	b := aBlock{Type: "tool_result", ToolUseID: anthropicToolID(res.id), IsError: res.isError}
	if len(res.parts) == 0 {
		return b
	}
	onlyText := true
	var texts []string
	for _, p := range res.parts {
		onlyText = onlyText && p.kind == textPart
		texts = append(texts, p.text)
	}
	if onlyText {
		b.Content = marshal(strings.Join(texts, ""))
		return b
	}
	var blocks []aBlock
	for _, p := range res.parts {
		if p.kind == imagePart {
			blocks = append(blocks, anthropicImageBlock(p.img))
		} else if p.text != "" {
			blocks = append(blocks, aBlock{Type: "text", Text: p.text})
		}
	}
	b.Content = marshal(blocks)
	return b
}
