package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Complete (non-streaming) answers. Reasoning and thinking content is
// not carried either way: an OpenAI model's reasoning summary is no
// Anthropic thinking block (which needs a signature Anthropic checks on
// the next turn), and Anthropic thinking is never asked for on a
// translated turn.

type chatMessageOut struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"` // string or null
	ToolCalls []cToolCall     `json:"tool_calls,omitempty"`
	Refusal   *string         `json:"refusal"`
}

type chatCompletionOut struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []chatChoiceOut `json:"choices"`
	Usage   *cUsage         `json:"usage"`
}

type chatChoiceOut struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

// rOutText is an output_text part; unlike input parts its text is
// present even when empty (content_part.added starts with "").
type rOutText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

func outText(s string) rOutText { return rOutText{Type: "output_text", Text: s, Annotations: []any{}} }

func messageItem(id, status string, parts ...rOutText) rItem {
	if parts == nil {
		parts = []rOutText{}
	}
	return rItem{ID: id, Type: "message", Status: status, Role: "assistant", Content: marshal(parts)}
}

func functionItem(callID, name, args, status string) rItem {
	return rItem{ID: functionItemID(callID), Type: "function_call", Status: status, CallID: callID, Name: name, Arguments: &args}
}

func messageItemID(msgID string, index int) string {
	return fmt.Sprintf("msg_%s_%d", strings.TrimPrefix(anthropicIDFromOpenAI(msgID), "msg_"), index)
}

// ---- OpenAI → Anthropic ----

// toolUse builds a tool_use block from an OpenAI call. Arguments cut off
// by the token limit are not JSON; the call is then dropped (ok false,
// err nil) since stop_reason already says max_tokens. Broken arguments
// on a finished answer are an upstream fault and fail.
func (c *conv) toolUse(id, name, args string, truncated bool, msgID string, n int) (aBlock, bool, error) {
	input, ok := argsObject(args)
	if !ok {
		if truncated {
			return aBlock{}, false, nil
		}
		return aBlock{}, false, fmt.Errorf("translate: upstream tool call %q: arguments are not a JSON object: %.80q", name, args)
	}
	if id == "" {
		// Some OpenAI-compatible servers send no id; Anthropic needs one.
		id = rewriteID("toolu_", fmt.Sprintf("%s:%d", msgID, n))
	}
	return aBlock{Type: "tool_use", ID: anthropicToolID(id), Name: name, Input: input}, true, nil
}

func (c *conv) chatToAnthropicResponse(body []byte, clientModel string) (*aResponse, error) {
	var in struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				Refusal   string          `json:"refusal"`
				ToolCalls []cToolCall     `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *cUsage `json:"usage"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: chat completion: %w", err)
	}
	if len(in.Choices) == 0 {
		return nil, fmt.Errorf("translate: chat completion without choices")
	}
	ch := in.Choices[0]
	out := aResponse{ID: anthropicIDFromOpenAI(in.ID), Type: "message", Role: "assistant", Model: clientModel,
		Content: []aBlock{}, Usage: anthropicUsageFromChat(in.Usage)}
	stop := anthropicStopFromChat(ch.FinishReason)

	texts, bad, typ, err := stringOrTexts(ch.Message.Content, "text")
	if err != nil || bad >= 0 {
		return nil, fmt.Errorf("translate: chat completion content: unexpected part %q (%v)", typ, err)
	}
	if s := strings.Join(texts, ""); s != "" {
		out.Content = append(out.Content, aBlock{Type: "text", Text: s})
	}
	if ch.Message.Refusal != "" {
		out.Content = append(out.Content, aBlock{Type: "text", Text: ch.Message.Refusal, refusal: true})
		stop = "refusal"
	}
	for i, tc := range ch.Message.ToolCalls {
		b, ok, err := c.toolUse(tc.ID, tc.Function.Name, tc.Function.Arguments, ch.FinishReason == "length", out.ID, i)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Content = append(out.Content, b)
		}
	}
	out.StopReason = &stop
	return &out, nil
}

func (c *conv) responsesToAnthropicResponse(body []byte, clientModel string) (*aResponse, error) {
	var in rResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: response: %w", err)
	}
	if in.Status == "failed" {
		return nil, fmt.Errorf("translate: response failed: %s", in.Error)
	}
	reason := ""
	if in.IncompleteDetails != nil {
		reason = in.IncompleteDetails.Reason
	}
	out := aResponse{ID: anthropicIDFromOpenAI(in.ID), Type: "message", Role: "assistant", Model: clientModel,
		Content: []aBlock{}, Usage: anthropicUsageFromResponses(in.Usage)}
	called, refused := false, false
	for i, it := range in.Output {
		switch it.Type {
		case "message":
			var ps []rPart
			if err := json.Unmarshal(it.Content, &ps); err != nil {
				return nil, fmt.Errorf("translate: response output[%d]: %w", i, err)
			}
			for _, p := range ps {
				switch p.Type {
				case "output_text":
					if p.Text != "" {
						out.Content = append(out.Content, aBlock{Type: "text", Text: p.Text})
					}
				case "refusal":
					out.Content = append(out.Content, aBlock{Type: "text", Text: p.Refusal, refusal: true})
					refused = true
				}
			}
		case "function_call":
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			b, ok, err := c.toolUse(it.CallID, it.Name, args, in.Status == "incomplete", out.ID, i)
			if err != nil {
				return nil, err
			}
			if ok {
				out.Content = append(out.Content, b)
				called = true
			}
		case "reasoning":
		default:
			return nil, fmt.Errorf("translate: response output[%d]: item type %q has no Anthropic equivalent", i, it.Type)
		}
	}
	stop := anthropicStopFromResponses(in.Status, reason, called)
	if refused {
		stop = "refusal"
	}
	out.StopReason = &stop
	return &out, nil
}

// ---- Anthropic → OpenAI ----

// anthropicAnswer reads a Messages answer.
func anthropicAnswer(body []byte) (*aResponse, error) {
	var in aResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: message: %w", err)
	}
	return &in, nil
}

// openAIBlocks keeps the blocks of an answer an OpenAI client can be
// given.
func openAIBlocks(body *aResponse) (*aResponse, error) {
	in := *body
	kept := make([]aBlock, 0, len(in.Content))
	for i, b := range in.Content {
		switch b.Type {
		case "text", "tool_use":
			kept = append(kept, b)
		case "thinking", "redacted_thinking":
		default:
			// Server tool blocks: never offered on a translated turn.
			return nil, fmt.Errorf("translate: message content[%d]: block type %q has no OpenAI equivalent", i, b.Type)
		}
	}
	in.Content = kept
	return &in, nil
}

// refused reports an answer that is a model's refusal, as OpenAI gives
// it: a refusal block and stop_reason "refusal". OpenAI marks such an
// answer finished normally; a stop "refusal" without one is a content
// filter.
func refused(in *aResponse) bool {
	if stopOf(in) != "refusal" {
		return false
	}
	for _, b := range in.Content {
		if b.refusal {
			return true
		}
	}
	return false
}

func stopOf(r *aResponse) string {
	if r.StopReason == nil {
		return "end_turn"
	}
	return *r.StopReason
}

func (c *conv) anthropicToChatResponse(body *aResponse, clientModel string) ([]byte, error) {
	in, err := openAIBlocks(body)
	if err != nil {
		return nil, err
	}
	msg := chatMessageOut{Role: "assistant"}
	var texts, refusals []string
	for _, b := range in.Content {
		switch {
		case b.refusal:
			refusals = append(refusals, b.Text)
			continue
		case b.Type == "text":
			texts = append(texts, b.Text)
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, cToolCall{ID: openAIToolID(b.ID), Type: "function",
			Function: cFunction{Name: b.Name, Arguments: compactArgs(string(b.Input))}})
	}
	switch {
	case len(texts) > 0:
		msg.Content = marshal(strings.Join(texts, ""))
	case len(msg.ToolCalls) > 0:
		msg.Content = json.RawMessage("null")
	case len(refusals) > 0:
		msg.Content = json.RawMessage("null")
	default:
		msg.Content = json.RawMessage(`""`)
	}
	finish := chatFinishReason(stopOf(in))
	if len(refusals) > 0 {
		s := strings.Join(refusals, "")
		msg.Refusal = &s
	}
	if refused(in) {
		finish = "stop"
	}
	out := chatCompletionOut{ID: chatIDFromAnthropic(in.ID), Object: "chat.completion", Created: now().Unix(),
		Model: clientModel, Usage: chatUsage(in.Usage),
		Choices: []chatChoiceOut{{Message: msg, FinishReason: finish}}}
	return marshal(out), nil
}

func (c *conv) anthropicToResponsesResponse(body *aResponse, clientModel string) ([]byte, error) {
	in, err := openAIBlocks(body)
	if err != nil {
		return nil, err
	}
	output := []rItem{}
	for _, b := range in.Content {
		switch {
		case b.refusal:
			output = append(output, refusalItem(messageItemID(in.ID, len(output)), "completed", b.Text))
		case b.Type == "text":
			output = append(output, messageItem(messageItemID(in.ID, len(output)), "completed", outText(b.Text)))
		default:
			output = append(output, functionItemFor(c.names, openAIToolID(b.ID), b.Name, compactArgs(string(b.Input)), "completed"))
		}
	}
	stop := stopOf(in)
	if refused(in) {
		stop = "end_turn" // a refusal is a completed response, as OpenAI sends it
	}
	out := responseObject(in.ID, clientModel, stop, output, in.Usage)
	return marshal(out), nil
}

// refusalItem is a message item holding a refusal part.
func refusalItem(id, status, text string) rItem {
	return rItem{ID: id, Type: "message", Status: status, Role: "assistant",
		Content: marshal([]rPart{{Type: "refusal", Refusal: text}})}
}

// responseObject is a finished Responses object: completed, or
// incomplete with the reason when the stop says the answer was cut.
func responseObject(msgID, model, stop string, output []rItem, u aUsage) rResponse {
	out := rResponse{ID: responseIDFromAnthropic(msgID), Object: "response", CreatedAt: now().Unix(),
		Status: "completed", Error: json.RawMessage("null"), Model: model, Output: output, Usage: responsesUsage(u)}
	if reason := responsesIncomplete(stop); reason != "" {
		out.Status = "incomplete"
		out.IncompleteDetails = &rIncomplete{Reason: reason}
	}
	return out
}
