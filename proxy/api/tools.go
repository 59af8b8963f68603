package api

// The tools a request can come from, as history records them (known by
// the User-Agent; proxy/metering.ClientApp reads it).
const (
	ToolClaudeCode = "claude-code"
	ToolCodex      = "codex"
	ToolGeminiCLI  = "gemini-cli"
	ToolOpenCode   = "opencode"
	ToolAider      = "aider"
	ToolOther      = "other"
)

// SubscriptionTool is the tool a subscription login is meant for, or ""
// when any tool may use it. A Claude subscription serves Claude Code:
// with an OAuth token Anthropic refuses requests that do not open with
// Claude Code's own system prompt, and bills other apps' use as extra
// usage ("Third-party apps now draw from your extra usage"). A Google
// login serves Gemini CLI, whose Code Assist terms it is granted under.
// A ChatGPT login is offered to other tools by OpenAI itself (opencode
// signs in with it), so it stays open. API keys serve any tool.
func SubscriptionTool(provider, kind string) string {
	if kind != KindOAuth {
		return ""
	}
	switch provider {
	case "anthropic":
		return ToolClaudeCode
	case "google":
		return ToolGeminiCLI
	}
	return ""
}

// ToolTitle is a tool's name as people write it.
func ToolTitle(tool string) string {
	switch tool {
	case ToolClaudeCode:
		return "Claude Code"
	case ToolCodex:
		return "Codex"
	case ToolGeminiCLI:
		return "Gemini CLI"
	case ToolOpenCode:
		return "opencode"
	case ToolAider:
		return "aider"
	case "", ToolOther:
		return "other tools"
	}
	return tool
}
