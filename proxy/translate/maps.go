package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Tool call ids cross the wires unchanged whenever both sides accept
// them, so a tool result sent on the next turn names the call it answers
// whichever provider serves that turn. Anthropic wants ^[a-zA-Z0-9_-]+$;
// Chat Completions refuses ids longer than 40 characters. Ids from
// either provider fit both, so the rewrite below is for foreign ids
// (other OpenAI-compatible servers mint ids like "functions.get:0"). It
// is a pure function of the id, so a call and its result, which carry the
// same id, are rewritten alike in every request and every answer.
const maxChatIDLen = 40

func anthropicToolID(id string) string {
	if id == "" {
		return ""
	}
	if validAnthropicID(id) {
		return id
	}
	return rewriteID("toolu_", id)
}

func openAIToolID(id string) string {
	if len(id) <= maxChatIDLen {
		return id
	}
	return rewriteID("call_", id)
}

func validAnthropicID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return id != ""
}

// rewriteID keeps a readable, valid-character prefix of the id and a
// hash of the whole, so two distinct ids never collide.
func rewriteID(prefix, id string) string {
	sum := sha256.Sum256([]byte(id))
	var keep strings.Builder
	for i := 0; i < len(id) && keep.Len() < 8; i++ {
		if c := id[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			keep.WriteByte(c)
		}
	}
	return prefix + keep.String() + "_" + hex.EncodeToString(sum[:])[:20]
}

// Anthropic message ids become OpenAI ids and back with the upstream's
// prefix swapped, so a log line can be traced across the detour. Only
// id characters survive: an upstream's id is not trusted to be one.

// An id from either OpenAI wire loses its prefix too (resp_X ⇄
// chatcmpl-X), as the stream encoders are handed the upstream's own id.

func chatIDFromAnthropic(id string) string {
	return "chatcmpl-" + strings.TrimPrefix(anthropicIDFromOpenAI(id), "msg_")
}

func responseIDFromAnthropic(id string) string {
	return "resp_" + strings.TrimPrefix(anthropicIDFromOpenAI(id), "msg_")
}

func anthropicIDFromOpenAI(id string) string {
	for _, p := range []string{"chatcmpl-", "resp_", "msg_"} {
		id = strings.TrimPrefix(id, p)
	}
	return "msg_" + idChars(id)
}

func idChars(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 64; i++ {
		if c := s[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "translated"
	}
	return b.String()
}

// functionItemID is the Responses item id of a function call; it must
// start with "fc_" (the Responses API refuses other item ids as input).
func functionItemID(callID string) string {
	return "fc_" + strings.TrimPrefix(strings.TrimPrefix(callID, "toolu_"), "call_")
}

// Stop reasons. Anthropic's reasons are finer than OpenAI's; the coarse
// mapping loses only which stop sequence matched (OpenAI never says).

func chatFinishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	// end_turn, stop_sequence, pause_turn (only after server tools,
	// which are never offered on a translated turn).
	return "stop"
}

func anthropicStopFromChat(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// responsesIncomplete is the incomplete_details reason of an Anthropic
// stop reason, or "" when the response is complete.
func responsesIncomplete(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "max_output_tokens"
	case "refusal":
		return "content_filter"
	}
	return ""
}

// anthropicStopFromResponses maps a response's status and incomplete
// reason; a completed response that called a function stopped for it.
func anthropicStopFromResponses(status, reason string, calledTool bool) string {
	if status == "incomplete" {
		if reason == "content_filter" {
			return "refusal"
		}
		return "max_tokens"
	}
	if calledTool {
		return "tool_use"
	}
	return "end_turn"
}

// reasoningModel guesses from the name whether an OpenAI model takes a
// reasoning effort. Sending reasoning_effort to gpt-4o is a 400, and
// omitting it from gpt-5 costs nothing, so an unknown name counts as not
// reasoning. The same models refuse temperature and top_p other than the
// default, so those are dropped for them too.
func reasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "openai/gpt-5" on routers
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "codex"} {
		if strings.HasPrefix(m, p) {
			return !strings.HasPrefix(m, "gpt-5-chat") // the chat variant has no reasoning
		}
	}
	return false
}

// effortFromThinking turns Anthropic's thinking settings into an OpenAI
// reasoning effort. An explicit effort (output_config.effort, which
// Claude Code's effort setting sends) wins; a budget maps by size; with
// neither the upstream default stands.
func effortFromThinking(th *aThinking, oc *aOutputConfig) string {
	if oc != nil && oc.Effort != "" {
		switch oc.Effort {
		case "low", "medium", "high":
			return oc.Effort
		case "max", "xhigh":
			return "high"
		}
		return ""
	}
	if th == nil || th.Type != "enabled" || th.BudgetTokens <= 0 {
		return ""
	}
	return effortFromBudget(th.BudgetTokens)
}

// ---- Gemini ----

// anthropicStopFromGemini maps a candidate's finishReason; ok is false
// for the reasons that say the model failed rather than finished (a
// malformed function call), which Gemini CLI retries and a client of
// another wire must see as an error.
func anthropicStopFromGemini(reason string, calledTool bool) (stop string, ok bool) {
	switch reason {
	case "MAX_TOKENS":
		return "max_tokens", true
	case "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER", "NO_IMAGE":
		return "refusal", true
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MALFORMED_RESPONSE", "MISSING_THOUGHT_SIGNATURE":
		return "", false
	}
	// STOP, OTHER, FINISH_REASON_UNSPECIFIED. Gemini says STOP after a
	// function call too.
	if calledTool {
		return "tool_use", true
	}
	return "end_turn", true
}

func geminiFinishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "MAX_TOKENS"
	case "refusal":
		return "SAFETY"
	}
	return "STOP" // end_turn, stop_sequence, tool_use, pause_turn
}

// geminiCallID is the tool id of a function call in a Gemini answer: its
// own id when the API gave one, else one derived from the answer's id,
// the call's place in it and its content, so that a JSON answer and the
// same answer collected from a stream name the call alike.
func geminiCallID(responseID string, n int, fc *gFunctionCall) string {
	if fc.ID != "" {
		return anthropicToolID(fc.ID)
	}
	return rewriteID("toolu_", fmt.Sprintf("%s:%d:%s:%s", responseID, n, fc.Name, compactArgs(string(fc.Args))))
}

// geminiResponseID is the responseId of an answer from another wire,
// its id without the upstream's prefix.
func geminiResponseID(id string) string {
	return strings.TrimPrefix(anthropicIDFromOpenAI(id), "msg_")
}

// Thinking. Gemini 2.5 takes a budget in tokens, Gemini 3 a level; both
// are bounded, and other models (Gemini 2.0, Gemma) refuse the setting.
const (
	// maxGeminiBudget is the largest budget every Gemini 2.5 model takes
	// (Flash and Flash-Lite stop at 24576, Pro at 32768).
	maxGeminiBudget = 24576
)

func geminiModelFamily(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "models/gemini-2.5-pro"
	}
	switch {
	case strings.HasPrefix(m, "gemini-2.5"):
		return "budget"
	case strings.HasPrefix(m, "gemini-3"):
		return "level"
	}
	return ""
}

// geminiThinking writes the neutral thinking request for model: an
// Anthropic budget as it is (bounded), an effort as a budget or a level.
// Without either the model's own default (dynamic thinking) stands.
func (c *conv) geminiThinking(r *request, model string) *gThinkingConfig {
	effort := r.effort
	if effort == "none" {
		effort = ""
	}
	if effort == "" && r.budget <= 0 {
		return nil
	}
	switch geminiModelFamily(model) {
	case "level":
		if effort == "" {
			effort = effortFromBudget(r.budget)
		}
		level := "HIGH" // the enum's names, as Gemini CLI sends them
		if effort == "minimal" || effort == "low" {
			level = "LOW"
		}
		return &gThinkingConfig{ThinkingLevel: level}
	case "budget":
		b := r.budget
		if b <= 0 {
			b = budgetFromEffort(effort)
		}
		if b > maxGeminiBudget {
			c.note(c.thinkingField(), "budget %d lowered to %d, the most every Gemini 2.5 model takes", b, maxGeminiBudget)
			b = maxGeminiBudget
		}
		return &gThinkingConfig{ThinkingBudget: &b}
	}
	c.note(c.thinkingField(), "dropped: %s takes no thinking setting this translation knows", model)
	return nil
}

func (c *conv) thinkingField() string {
	switch wire(c.from) {
	case OpenAIChat:
		return "reasoning_effort"
	case OpenAIResponses:
		return "reasoning"
	case Gemini:
		return "generationConfig.thinkingConfig"
	}
	return "thinking"
}

func effortFromBudget(b int) string {
	switch {
	case b < 4096:
		return "low"
	case b < 16384:
		return "medium"
	}
	return "high"
}

func budgetFromEffort(effort string) int {
	switch effort {
	case "minimal":
		return 512 // Flash-Lite's least
	case "low":
		return 1024
	case "medium":
		return 8192 // Gemini CLI's default
	}
	return maxGeminiBudget
}

// effortFromGemini reads a thinkingConfig as an OpenAI effort: a level as
// it is, a budget by size; a dynamic budget (-1) or none leaves the
// model's default, and so does 0 (off), which OpenAI reasoning models
// cannot do.
func effortFromGemini(th *gThinkingConfig) string {
	switch strings.ToUpper(th.ThinkingLevel) {
	case "MINIMAL", "LOW":
		return "low"
	case "MEDIUM":
		return "medium"
	case "HIGH":
		return "high"
	}
	if th.ThinkingBudget == nil || *th.ThinkingBudget <= 0 {
		return ""
	}
	return effortFromBudget(*th.ThinkingBudget)
}
