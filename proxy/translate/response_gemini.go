package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// geminiToAnthropicResponse reads a GenerateContentResponse. Thoughts are
// dropped (an Anthropic thinking block needs a signature only Claude
// makes); consecutive text parts are one block, as Gemini cuts its text
// into parts at will.
func (c *conv) geminiToAnthropicResponse(body []byte, clientModel string) (*aResponse, error) {
	var in gResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: gemini answer: %w", err)
	}
	out := aResponse{ID: anthropicIDFromOpenAI(in.ResponseID), Type: "message", Role: "assistant", Model: clientModel,
		Content: []aBlock{}, Usage: anthropicUsageFromGemini(in.UsageMetadata)}
	if len(in.Candidates) == 0 {
		if in.PromptFeedback == nil || in.PromptFeedback.BlockReason == "" {
			return nil, fmt.Errorf("translate: gemini answer without candidates")
		}
		// The prompt itself was blocked.
		stop := "refusal"
		out.StopReason = &stop
		return &out, nil
	}
	cand := in.Candidates[0]
	var txt strings.Builder
	flush := func() {
		if txt.Len() > 0 {
			out.Content = append(out.Content, aBlock{Type: "text", Text: txt.String()})
			txt.Reset()
		}
	}
	calls := 0
	if cand.Content != nil {
		for i, p := range cand.Content.Parts {
			switch {
			case p.Thought:
			case p.FunctionCall != nil:
				flush()
				b, err := geminiToolUse(in.ResponseID, calls, p.FunctionCall)
				if err != nil {
					return nil, err
				}
				out.Content = append(out.Content, b)
				calls++
			case p.Text != nil:
				txt.WriteString(*p.Text)
			case p.InlineData != nil || p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil || p.FunctionResponse != nil:
				return nil, fmt.Errorf("translate: gemini answer part %d has no Anthropic equivalent", i)
			}
		}
	}
	flush()
	stop, ok := anthropicStopFromGemini(cand.FinishReason, calls > 0)
	if !ok {
		return nil, fmt.Errorf("translate: gemini ended its answer with %s", cand.FinishReason)
	}
	out.StopReason = &stop
	return &out, nil
}

func geminiToolUse(responseID string, n int, fc *gFunctionCall) (aBlock, error) {
	args := "{}"
	if !isNull(fc.Args) {
		args = string(fc.Args)
	}
	input, ok := argsObject(args)
	if !ok {
		return aBlock{}, fmt.Errorf("translate: upstream function call %q: arguments are not a JSON object: %.80q", fc.Name, args)
	}
	return aBlock{Type: "tool_use", ID: geminiCallID(responseID, n, fc), Name: fc.Name, Input: input}, nil
}

// anthropicToGeminiResponse writes an answer in the Anthropic form (from
// any wire) as a GenerateContentResponse. Thinking becomes thought parts,
// which a Gemini client shows and never sends back.
func (c *conv) anthropicToGeminiResponse(in *aResponse, clientModel string) ([]byte, error) {
	parts := []gPart{}
	for i, b := range in.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, gText(b.Text))
			}
		case "tool_use":
			input := b.Input
			if isNull(input) {
				input = json.RawMessage("{}")
			}
			parts = append(parts, gPart{FunctionCall: &gFunctionCall{ID: b.ID, Name: b.Name, Args: compact(input)}})
		case "thinking":
			if b.Thinking != "" {
				parts = append(parts, gPart{Text: &b.Thinking, Thought: true})
			}
		case "redacted_thinking":
		default:
			return nil, fmt.Errorf("translate: message content[%d]: block type %q has no Gemini equivalent", i, b.Type)
		}
	}
	out := gResponse{
		Candidates:    []gCandidate{{Content: &gContent{Role: "model", Parts: parts}, FinishReason: geminiFinishReason(stopOf(in))}},
		UsageMetadata: geminiUsage(in.Usage), ModelVersion: clientModel, ResponseID: geminiResponseID(in.ID),
	}
	return marshal(out), nil
}
