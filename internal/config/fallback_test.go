package config

import (
	"reflect"
	"strings"
	"testing"
)

// With no config at all, each subscription falls back to the others, tier
// for tier, and the written default file means the same.
func TestFallbackDefaults(t *testing.T) {
	c, err := Parse("config.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider, model, want string
	}{
		{"anthropic", "claude-opus-4-1", "openai/gpt-5.1,google/gemini-2.5-pro"},
		{"anthropic", "claude-opus-4-5-20251101", "openai/gpt-5.1,google/gemini-2.5-pro"},
		{"anthropic", "claude-3-opus-20240229", "openai/gpt-5.1,google/gemini-2.5-pro"},
		{"anthropic", "claude-sonnet-4-5", "openai/gpt-5.1-codex,google/gemini-2.5-flash"},
		{"anthropic", "claude-3-7-sonnet-latest", "openai/gpt-5.1-codex,google/gemini-2.5-flash"},
		{"anthropic", "claude-haiku-4-5", "openai/gpt-5.1-codex-mini,google/gemini-2.5-flash-lite"},
		{"anthropic", "claude-3-5-haiku-20241022", "openai/gpt-5.1-codex-mini,google/gemini-2.5-flash-lite"},
		{"anthropic", "", "openai/gpt-5.1-codex,google/gemini-2.5-flash"}, // no model named: medium
		{"openai", "gpt-5.1-codex", "anthropic/claude-sonnet-4-5,google/gemini-2.5-flash"},
		{"openai", "gpt-5-codex", "anthropic/claude-sonnet-4-5,google/gemini-2.5-flash"},
		{"openai", "gpt-5.1", "anthropic/claude-opus-4-5,google/gemini-2.5-pro"},
		{"openai", "gpt-5.1-codex-max", "anthropic/claude-opus-4-5,google/gemini-2.5-pro"},
		{"openai", "gpt-5-pro", "anthropic/claude-opus-4-5,google/gemini-2.5-pro"},
		{"openai", "gpt-5.1-codex-mini", "anthropic/claude-haiku-4-5,google/gemini-2.5-flash-lite"},
		{"openai", "o4-mini", "anthropic/claude-haiku-4-5,google/gemini-2.5-flash-lite"},
		{"openai", "gpt-4.1-nano", "anthropic/claude-haiku-4-5,google/gemini-2.5-flash-lite"},
		{"openai", "gpt-4o", "anthropic/claude-sonnet-4-5,google/gemini-2.5-flash"},
		{"google", "gemini-2.5-pro", "anthropic/claude-opus-4-5,openai/gpt-5.1"},
		{"google", "gemini-3-pro-preview", "anthropic/claude-opus-4-5,openai/gpt-5.1"},
		{"google", "gemini-2.5-flash", "anthropic/claude-sonnet-4-5,openai/gpt-5.1-codex"},
		{"google", "gemini-2.5-flash-lite", "anthropic/claude-haiku-4-5,openai/gpt-5.1-codex-mini"},
		{"zai", "glm-4.6", ""}, // custom providers have no built-in ladder
	} {
		if got := targets(c.Fallback, tc.provider, tc.model); got != tc.want {
			t.Errorf("%s/%s → %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
	d, err := Parse("config.toml", []byte(DefaultText))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Fallback, DefaultFallback()) {
		t.Errorf("DefaultText's [fallback] differs from DefaultFallback():\n%+v", d.Fallback)
	}
}

func targets(f Fallback, provider, model string) string {
	var s []string
	for _, t := range f.Targets(provider, model) {
		s = append(s, t.Provider+"/"+t.Model)
	}
	return strings.Join(s, ",")
}

// A ladder of one's own: rungs in order, each for the models it matches,
// the model named or taken from the target's tier table; tier tables
// merge with the built-in ones.
func TestFallbackLadderAndTiers(t *testing.T) {
	c, err := Parse("config.toml", []byte(`
[providers.zai]
wire = "anthropic"
base_url = "https://api.z.ai/api/anthropic"

[[fallback.anthropic]]
match = ["claude-opus-*", "claude-sonnet-*"]
provider = "zai"
model = "glm-4.6"
[[fallback.anthropic]]
provider = "openai"
[[fallback.anthropic]]
match = "*haiku*"
provider = "zai"                  # glm by tier

[fallback.models.zai]
fast = "glm-4.5-air"              # its only model: every tier takes it

[fallback.models.openai]
strong = "gpt-5.2"                # the others stay built in

[fallback.tiers.anthropic]
strong = ["claude-opus-*", "claude-sonnet-4-5"]   # treat the newest sonnet as strong
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider, model, want string
	}{
		{"anthropic", "claude-opus-4-1", "zai/glm-4.6,openai/gpt-5.2"},
		{"anthropic", "claude-sonnet-4-5", "zai/glm-4.6,openai/gpt-5.2"},
		{"anthropic", "claude-sonnet-4", "zai/glm-4.6,openai/gpt-5.1-codex"},
		{"anthropic", "claude-haiku-4-5", "openai/gpt-5.1-codex-mini,zai/glm-4.5-air"},
		{"openai", "gpt-5.1", "anthropic/claude-opus-4-5,google/gemini-2.5-pro"}, // the built-in ladder still holds
	} {
		if got := targets(c.Fallback, tc.provider, tc.model); got != tc.want {
			t.Errorf("%s/%s → %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
}

func TestFallbackOff(t *testing.T) {
	c, err := Parse("config.toml", []byte("[fallback]\nenabled = false"))
	if err != nil || c.Fallback.Targets("anthropic", "claude-opus-4-1") != nil {
		t.Fatalf("disabled fallback still has targets (err %v)", err)
	}
	c, err = Parse("config.toml", []byte("[fallback]\nanthropic = []"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Fallback.Targets("anthropic", "claude-opus-4-1") != nil || c.Fallback.Targets("openai", "gpt-5") == nil {
		t.Fatal("an empty ladder must turn off that provider's fallback only")
	}
}

// Every bad value is one line that names its key.
func TestFallbackErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		toml, key string
	}{
		{"[fallback]\nenabled = \"yes\"", "fallback.enabled"},
		{"[[fallback.anthropic]]\nprovider = \"openai\"\nmodel = 5", "fallback.anthropic[0].model"},
		{"[[fallback.anthropic]]\nprovider = \"openai\"\nmodel = \"gpt-*\"", "fallback.anthropic[0].model"},
		{"[[fallback.anthropic]]\nprovider = \"openai\"\n[[fallback.anthropic]]\nprovider = \"zai\"", "fallback.anthropic[1].provider"},
		{"[[fallback.anthropic]]\nprovider = \"anthropic\"", "fallback.anthropic[0].provider"},
		{"[[fallback.anthropic]]\nmodel = \"gpt-5\"", "fallback.anthropic[0].provider"},
		{"[[fallback.anthropic]]\nprovider = \"openai\"\ntier = \"strong\"", "fallback.anthropic[0].tier"},
		{"[[fallback.anthropic]]\nprovider = \"openai\"\nmatch = [1]", "fallback.anthropic[0].match"},
		{"[[fallback.anthropic]]\nprovider = \"openai\"\nmatch = \"\"", "fallback.anthropic[0].match"},
		{"[fallback]\nanthropic = \"openai\"", "fallback.anthropic"},
		{"[[fallback.antropic]]\nprovider = \"openai\"", "fallback.antropic"},
		{"[fallback.models.openai]\nbest = \"gpt-5\"", "fallback.models.openai.best"},
		{"[fallback.models.openai]\nstrong = \"\"", "fallback.models.openai.strong"},
		{"[fallback.models.nobody]\nstrong = \"x\"", "fallback.models.nobody"},
		{"[fallback.tiers.openai]\nfast = 3", "fallback.tiers.openai.fast"},
		{"[fallback]\ntiers = 1", "fallback.tiers"},
		{"[fallback]\nmodels = 1", "fallback.models"},
		{"[fallback.models]\nopenai = \"gpt-5\"", "fallback.models.openai"},
		{"[fallback.tiers]\nopenai = [\"gpt-5*\"]", "fallback.tiers.openai"},
		{"[fallback.tiers.nobody]\nfast = [\"x\"]", "fallback.tiers.nobody"},
		// A custom provider has no tier models: the rung must name one.
		{"[providers.zai]\nwire = \"anthropic\"\nbase_url = \"https://x\"\n[[fallback.anthropic]]\nprovider = \"zai\"", "fallback.anthropic[0].model"},
	} {
		_, err := Parse("config.toml", []byte(tc.toml))
		if err == nil {
			t.Errorf("%q: no error", tc.toml)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "config.toml: "+tc.key+":") || strings.Contains(msg, "\n") {
			t.Errorf("%q: error %q does not name %s in one line", tc.toml, msg, tc.key)
		}
	}
}
