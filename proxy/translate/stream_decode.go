package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ---- Anthropic Messages SSE ----

type anthropicDecoder struct {
	stop  string
	usage aUsage
}

// anthropicEvent is one Messages stream event; which fields are set
// depends on its type.
type anthropicEvent struct {
	Type         string     `json:"type"`
	Index        int        `json:"index"`
	Message      *aResponse `json:"message"`
	ContentBlock *aBlock    `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		InputTokens              *int `json:"input_tokens"`
		CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
		OutputTokens             *int `json:"output_tokens"`
	} `json:"usage"`
}

func (d *anthropicDecoder) feed(a *assembler, event string, data []byte) error {
	if e, ok := streamError(Anthropic, event, data); ok {
		a.fail(e)
		return nil
	}
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("event %q: %w", event, err)
	}
	if ev.Type == "" {
		ev.Type = event
	}
	key := strconv.Itoa(ev.Index)
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			d.usage = ev.Message.Usage
			a.start(ev.Message.ID, ev.Message.Usage)
		}
	case "content_block_start":
		if ev.ContentBlock == nil {
			return fmt.Errorf("content_block_start without content_block")
		}
		switch cb := ev.ContentBlock; cb.Type {
		case "text":
			return a.text(key, cb.Text)
		case "tool_use":
			return a.tool(key, cb.ID, cb.Name)
		case "thinking":
			// Shown to a Gemini client only: see the encoders' thought.
			a.thought(cb.Thinking)
		case "redacted_thinking":
		default:
			return fmt.Errorf("block type %q has no equivalent", cb.Type)
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			return a.text(key, ev.Delta.Text)
		case "input_json_delta":
			return a.args(key, ev.Delta.PartialJSON)
		case "thinking_delta":
			a.thought(ev.Delta.Thinking)
		}
		// signature_delta, citations_delta: dropped.
	case "content_block_stop":
		a.end(key)
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != nil {
			d.stop = *ev.Delta.StopReason
		}
		// message_delta usage is cumulative; newer upstreams repeat the
		// input counts here, older ones send output_tokens alone.
		if u := ev.Usage; u != nil {
			set := func(dst *int, src *int) {
				if src != nil {
					*dst = *src
				}
			}
			set(&d.usage.InputTokens, u.InputTokens)
			set(&d.usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
			set(&d.usage.CacheReadInputTokens, u.CacheReadInputTokens)
			set(&d.usage.OutputTokens, u.OutputTokens)
		}
	case "message_stop":
		a.finish(d.stopReason(), d.usage)
	}
	return nil
}

func (d *anthropicDecoder) stopReason() string {
	if d.stop == "" {
		return "end_turn"
	}
	return d.stop
}

func (d *anthropicDecoder) end(a *assembler) {
	if d.stop != "" {
		a.finish(d.stop, d.usage)
	}
}

// ---- Chat Completions SSE ----

type chatDecoder struct {
	id      string
	finish  string
	usage   *cUsage
	refused bool
	called  bool
	segment int // text after a tool call is a new text block
	calls   map[int]*chatCall

	inRefusal bool // the last text was a refusal
}

// chatCall is a tool call being streamed. Its block opens once its name
// is known; arguments that come before are held until then.
type chatCall struct {
	id, name string
	held     strings.Builder
	started  bool
}

func (d *chatDecoder) feed(a *assembler, _ string, data []byte) error {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return d.done(a)
	}
	if e, ok := streamError(OpenAIChat, "", data); ok {
		a.fail(e)
		return nil
	}
	var ch struct {
		ID      string `json:"id"`
		Choices []struct {
			Delta struct {
				Content   *string     `json:"content"`
				Refusal   *string     `json:"refusal"`
				ToolCalls []cToolCall `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *cUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("chunk: %w", err)
	}
	if d.id == "" {
		d.id = ch.ID
		a.start(ch.ID, aUsage{})
	}
	if ch.Usage != nil {
		d.usage = ch.Usage
	}
	if len(ch.Choices) == 0 {
		return nil // the usage chunk
	}
	c := ch.Choices[0]
	if s := c.Delta.Content; s != nil && *s != "" {
		if err := a.text(d.textKey(false), *s); err != nil {
			return err
		}
	}
	if s := c.Delta.Refusal; s != nil && *s != "" {
		d.refused = true
		if err := a.refusal(d.textKey(true), *s); err != nil {
			return err
		}
	}
	for i, tc := range c.Delta.ToolCalls {
		if err := d.toolDelta(a, i, tc); err != nil {
			return err
		}
	}
	if c.FinishReason != nil && *c.FinishReason != "" {
		d.finish = *c.FinishReason
		for idx, call := range d.calls {
			if !call.started {
				return fmt.Errorf("tool call %d never named its function", idx)
			}
		}
		a.closeBlock()
	}
	return nil
}

// textKey is the block key of the text (or refusal) under way: a switch
// between the two, or text after a tool call, starts a new block.
func (d *chatDecoder) textKey(refusal bool) string {
	if refusal != d.inRefusal {
		d.inRefusal = refusal
		d.segment++
	}
	if refusal {
		return "refusal" + strconv.Itoa(d.segment)
	}
	return "text" + strconv.Itoa(d.segment)
}

func (d *chatDecoder) toolDelta(a *assembler, pos int, tc cToolCall) error {
	idx := pos
	if tc.Index != nil {
		idx = *tc.Index
	}
	if d.calls == nil {
		d.calls = map[int]*chatCall{}
	}
	call := d.calls[idx]
	if call == nil {
		call = &chatCall{}
		d.calls[idx] = call
	}
	key := "call" + strconv.Itoa(idx)
	if call.started {
		return a.args(key, tc.Function.Arguments)
	}
	if tc.ID != "" {
		call.id = tc.ID
	}
	if tc.Function.Name != "" {
		call.name = tc.Function.Name
	}
	call.held.WriteString(tc.Function.Arguments)
	if call.name == "" {
		return nil
	}
	id := call.id
	if id == "" {
		// Some OpenAI-compatible servers send no id; Anthropic needs one.
		id = rewriteID("toolu_", fmt.Sprintf("%s:%d", d.id, idx))
	}
	if err := a.tool(key, anthropicToolID(id), call.name); err != nil {
		return err
	}
	call.started, d.called = true, true
	d.segment++
	return a.args(key, call.held.String())
}

func (d *chatDecoder) stopReason() string {
	switch {
	case d.finish == "" && d.called:
		return "tool_use"
	case d.refused && (d.finish == "" || d.finish == "stop"):
		return "refusal"
	}
	return anthropicStopFromChat(d.finish)
}

// done handles [DONE]. An upstream that sends [DONE] without a finish
// reason has still said the answer is over.
func (d *chatDecoder) done(a *assembler) error {
	a.finish(d.stopReason(), anthropicUsageFromChat(d.usage))
	return nil
}

func (d *chatDecoder) end(a *assembler) {
	if d.finish != "" {
		a.finish(d.stopReason(), anthropicUsageFromChat(d.usage))
	}
}

// ---- Responses SSE ----

type responsesDecoder struct {
	argsSeen map[int]bool
	textKey  map[int]string // output index → its last text block key
	called   bool
	refused  bool
}

// responsesEvent is one Responses stream event; which fields are set
// depends on its type.
type responsesEvent struct {
	Type         string     `json:"type"`
	OutputIndex  int        `json:"output_index"`
	ContentIndex int        `json:"content_index"`
	Delta        string     `json:"delta"`
	Arguments    string     `json:"arguments"`
	Item         *rItem     `json:"item"`
	Response     *rResponse `json:"response"`
}

func (d *responsesDecoder) feed(a *assembler, event string, data []byte) error {
	if e, ok := streamError(OpenAIResponses, event, data); ok {
		a.fail(e)
		return nil
	}
	var ev responsesEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("event %q: %w", event, err)
	}
	if ev.Type == "" {
		ev.Type = event
	}
	if d.argsSeen == nil {
		d.argsSeen, d.textKey = map[int]bool{}, map[int]string{}
	}
	oi := ev.OutputIndex
	callKey := "item" + strconv.Itoa(oi)
	textKey := fmt.Sprintf("text%d.%d", oi, ev.ContentIndex)
	switch ev.Type {
	case "response.created", "response.in_progress":
		if ev.Response != nil {
			a.start(ev.Response.ID, aUsage{})
		}
	case "response.output_item.added":
		if ev.Item == nil {
			return fmt.Errorf("output_item.added without item")
		}
		return d.itemAdded(a, ev.Item, oi, callKey)
	case "response.output_text.delta":
		d.textKey[oi] = textKey
		return a.text(textKey, ev.Delta)
	case "response.refusal.delta":
		d.refused = true
		d.textKey[oi] = textKey
		return a.refusal(textKey, ev.Delta)
	case "response.content_part.done":
		a.end(textKey)
	case "response.function_call_arguments.delta":
		d.argsSeen[oi] = true
		return a.args(callKey, ev.Delta)
	case "response.function_call_arguments.done":
		if !d.argsSeen[oi] {
			d.argsSeen[oi] = true
			return a.args(callKey, ev.Arguments)
		}
	case "response.output_item.done":
		return d.itemDone(a, ev.Item, oi, callKey)
	case "response.completed", "response.incomplete":
		d.completed(a, ev.Type, ev.Response)
	}
	// Everything else (reasoning summaries, annotations, web search
	// progress) carries nothing a translated answer keeps.
	return nil
}

// itemAdded starts a function call's tool block, with its arguments when
// the item already carries them.
func (d *responsesDecoder) itemAdded(a *assembler, it *rItem, oi int, callKey string) error {
	switch it.Type {
	case "function_call":
		d.called = true
		if err := a.tool(callKey, anthropicToolID(it.CallID), it.Name); err != nil {
			return err
		}
		if it.Arguments != nil && *it.Arguments != "" {
			d.argsSeen[oi] = true
			return a.args(callKey, *it.Arguments)
		}
	case "message", "reasoning":
	default:
		return fmt.Errorf("output item type %q has no equivalent", it.Type)
	}
	return nil
}

// itemDone ends the item's block: a function call's, after its arguments
// when no delta brought them, else the item's last text block.
func (d *responsesDecoder) itemDone(a *assembler, it *rItem, oi int, callKey string) error {
	if it != nil && it.Type == "function_call" {
		if !d.argsSeen[oi] && it.Arguments != nil {
			d.argsSeen[oi] = true
			if err := a.args(callKey, *it.Arguments); err != nil {
				return err
			}
		}
		a.end(callKey)
	} else if k, ok := d.textKey[oi]; ok {
		a.end(k)
	}
	return nil
}

// completed finishes the answer with the stop reason and usage of
// response.completed or response.incomplete (typ).
func (d *responsesDecoder) completed(a *assembler, typ string, r *rResponse) {
	var u aUsage
	status, reason := "completed", ""
	if r != nil {
		u = anthropicUsageFromResponses(r.Usage)
		status = r.Status
		if r.IncompleteDetails != nil {
			reason = r.IncompleteDetails.Reason
		}
	}
	if typ == "response.incomplete" {
		status = "incomplete"
	}
	stop := anthropicStopFromResponses(status, reason, d.called)
	if d.refused && stop == "end_turn" {
		stop = "refusal"
	}
	a.finish(stop, u)
}

// end does nothing: a Responses answer is over only at response.completed
// (or .incomplete), so a stream without it was cut short.
func (d *responsesDecoder) end(*assembler) {}
