package toolsetup

import (
	"path/filepath"
	"time"
)

// Claude Code reads "env" from settings.json in its config dir
// (CLAUDE_CONFIG_DIR, else ~/.claude) and applies it to every session.
func claudeSettings(e Env) string {
	return filepath.Join(e.dir("CLAUDE_CONFIG_DIR", ".claude"), "settings.json")
}

func claudeSets(_ []byte, t Target) []jsonSet {
	return []jsonSet{
		{"env.ANTHROPIC_BASE_URL", t.Base},
		{"env.ANTHROPIC_AUTH_TOKEN", t.Key},
	}
}

// Gemini CLI needs the key auth selected in settings.json before it takes
// GOOGLE_GEMINI_BASE_URL; the address and key go in ~/.gemini/.env, which
// it loads (in a trusted folder, when no nearer .env exists).
func geminiSettings(e Env) string {
	return filepath.Join(e.Home, ".gemini", "settings.json")
}

func geminiDotenv(e Env) string {
	return filepath.Join(e.Home, ".gemini", ".env")
}

func geminiSettingsSets([]byte, Target) []jsonSet {
	return []jsonSet{{"security.auth.selectedType", "gemini-api-key"}}
}

func geminiDotenvEdit(before []byte, t Target) ([]byte, error) {
	return setDotenv(before, [][2]string{
		{"GOOGLE_GEMINI_BASE_URL", t.Base},
		{"GEMINI_API_KEY", t.Key},
	}), nil
}

// opencode's global config, under XDG_CONFIG_HOME; both of its built-in
// providers that subpool serves get the address and key.
func opencodeConfig(e Env) string {
	return filepath.Join(e.dir("XDG_CONFIG_HOME", ".config"), "opencode", "opencode.json")
}

func opencodeSets(before []byte, t Target) []jsonSet {
	sets := []jsonSet{
		{"provider.anthropic.options.baseURL", t.Base + "/v1"},
		{"provider.anthropic.options.apiKey", t.Key},
		{"provider.openai.options.baseURL", t.Base + "/v1"},
		{"provider.openai.options.apiKey", t.Key},
	}
	if before == nil {
		sets = append([]jsonSet{{escapeKey("$schema"), "https://opencode.ai/config.json"}}, sets...)
	}
	return sets
}

// Cline CLI keeps its providers in data/settings/providers.json under
// CLINE_DIR (else ~/.cline), in the shape `cline auth` writes; subpool is
// its OpenAI-compatible provider, made the one in use.
func clineProviders(e Env) string {
	return filepath.Join(e.dir("CLINE_DIR", ".cline"), "data", "settings", "providers.json")
}

// now is when Cline's record says the provider was set; a variable so the
// tests' bytes do not depend on the clock.
var now = time.Now

func clineSets(before []byte, t Target) []jsonSet {
	const p = "providers.openai-compatible."
	sets := []jsonSet{
		{p + "settings.provider", "openai-compatible"},
		{p + "settings.apiKey", t.Key},
		{p + "settings.model", t.Model},
		{p + "settings.baseUrl", t.Base + "/v1"},
		{p + "updatedAt", now().UTC().Format("2006-01-02T15:04:05.000Z")},
		{p + "tokenSource", "manual"},
		{"lastUsedProvider", "openai-compatible"},
	}
	if before == nil {
		sets = append([]jsonSet{{"version", 1}, {"modes", map[string]any{}}}, sets...)
	}
	return sets
}

// Continue CLI reads config.yaml in CONTINUE_GLOBAL_DIR (else ~/.continue).
func continueConfig(e Env) string {
	return filepath.Join(e.dir("CONTINUE_GLOBAL_DIR", ".continue"), "config.yaml")
}
