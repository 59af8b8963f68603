package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestModelsAliases(t *testing.T) {
	c, err := Parse("config.toml", []byte(`
[providers.zai]
wire = "anthropic"
base_url = "https://api.z.ai/api/anthropic"
[models]
opus = "claude-opus-4-5"
best = ["anthropic/claude-opus-4-5", "openai/gpt-5.1"]
glm = "zai/org/glm-4.6"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Aliases{
		"opus": {{Model: "claude-opus-4-5"}},
		"best": {{Provider: "anthropic", Model: "claude-opus-4-5"}, {Provider: "openai", Model: "gpt-5.1"}},
		"glm":  {{Provider: "zai", Model: "org/glm-4.6"}},
	}
	if !reflect.DeepEqual(c.Models, want) {
		t.Errorf("models %+v", c.Models)
	}
}

func TestModelsErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ toml, key string }{
		{`best = ["anthropic/claude-opus-4-5", "nope/gpt-5.1"]`, `models."best"[1]`},
		{`x = "nope/m"`, `models."x"`},
		{`x = []`, `models."x"`},
		{`x = 3`, `models."x"`},
		{`x = ["anthropic/"]`, `models."x"[0]`},
		// An alias that names itself (issue 27) asks the upstream for a
		// model of its own name.
		{`opus = "opus"`, `models."opus"`},
		{`best = ["openai/gpt-5.1", "anthropic/best"]`, `models."best"[1]`},
	} {
		_, err := Parse("config.toml", []byte("[models]\n"+c.toml+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.key+":") {
			t.Errorf("%s: %v, want an error naming %s", c.toml, err, c.key)
		}
	}
	_, err := Parse("config.toml", []byte("[models]\nbest = [\"nope/gpt-5.1\"]\n"))
	if err == nil || !strings.Contains(err.Error(), `provider "nope"`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestDiffSaysWhatAppliesLive(t *testing.T) {
	old := Default()
	edit := func(toml string) Reload {
		t.Helper()
		c, err := Parse("config.toml", []byte(toml))
		if err != nil {
			t.Fatal(err)
		}
		return Diff(old, c)
	}
	if r := edit(""); len(r.Live)+len(r.Restart) != 0 {
		t.Errorf("no edit: %+v", r)
	}
	r := edit("listen = \"127.0.0.1:9999\"\n[cooldown]\nladder = [\"10s\"]\n[models]\nx = \"y\"\n")
	if !reflect.DeepEqual(r.Live, []string{"cooldown.ladder", "models"}) || !reflect.DeepEqual(r.Restart, []string{"listen"}) {
		t.Errorf("%+v", r)
	}
	r = edit("[keychain]\nbackend = \"file\"\n[providers.zai]\nwire = \"openai\"\nbase_url = \"https://x.example\"\n")
	if len(r.Live) != 0 || !reflect.DeepEqual(r.Restart, []string{"keychain.backend", "providers.zai"}) {
		t.Errorf("%+v", r)
	}
}
