package metering

import (
	"strings"

	"github.com/subpool/subpool/proxy/api"
)

// Client app families, from the User-Agent: the tools api names, which
// the tool rules of subscriptions use too.
const (
	AppClaudeCode = api.ToolClaudeCode
	AppCodex      = api.ToolCodex
	AppOpenCode   = api.ToolOpenCode
	AppAider      = api.ToolAider
	AppGeminiCLI  = api.ToolGeminiCLI
	AppOther      = api.ToolOther
)

// ClientApp names the tool behind a User-Agent, for grouping history. The
// strings are what the tools send: Claude Code "claude-cli/2.0.14
// (external, cli)", Codex "codex_cli_rs/0.46.0 (...)" (and codex_exec,
// codex_vscode), opencode "opencode/0.15.0 ...", aider through litellm
// "aider/0.86.0" when it names itself, Gemini CLI
// "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64; …)" (or "GeminiCLI-NAME/…"
// when embedded; @google/gemini-cli 0.61.0's bundle builds it so).
func ClientApp(userAgent string) string {
	ua := strings.ToLower(userAgent)
	switch {
	case ua == "":
		return AppOther
	case strings.Contains(ua, "claude-cli") || strings.Contains(ua, "claude-code"):
		return AppClaudeCode
	case strings.HasPrefix(ua, "geminicli"):
		// Before codex: the model named in the agent may be anything.
		return AppGeminiCLI
	case strings.Contains(ua, "codex"):
		return AppCodex
	case strings.Contains(ua, "opencode"):
		return AppOpenCode
	case strings.Contains(ua, "aider"):
		return AppAider
	}
	return AppOther
}
