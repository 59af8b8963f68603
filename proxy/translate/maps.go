package translate

import (
	"crypto/sha256"
	"encoding/hex"
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

func chatIDFromAnthropic(id string) string {
	return "chatcmpl-" + idChars(strings.TrimPrefix(id, "msg_"))
}

func responseIDFromAnthropic(id string) string {
	return "resp_" + idChars(strings.TrimPrefix(id, "msg_"))
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
	switch {
	case th.BudgetTokens < 4096:
		return "low"
	case th.BudgetTokens < 16384:
		return "medium"
	}
	return "high"
}
