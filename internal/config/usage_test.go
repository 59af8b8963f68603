package config

import (
	"strings"
	"testing"
	"time"
)

func TestUsageDefaultsAndDefaultText(t *testing.T) {
	c, err := Parse("config.toml", []byte(DefaultText))
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{Poll: 5 * time.Minute, WarnAt: 90}
	if c.Usage != want || Default().Usage != want {
		t.Fatalf("usage %+v, default %+v", c.Usage, Default().Usage)
	}
	if c.Providers[Anthropic].UsageURL != "https://api.anthropic.com/api/oauth/usage" ||
		c.Providers[OpenAI].UsageURL != "https://chatgpt.com/backend-api/wham/usage" {
		t.Fatalf("usage URLs %q %q", c.Providers[Anthropic].UsageURL, c.Providers[OpenAI].UsageURL)
	}
}

func TestUsageKeys(t *testing.T) {
	c, err := Parse("config.toml", []byte(`
[providers.anthropic]
usage_url = "http://127.0.0.1:9999/api/oauth/usage/"
[usage]
poll = "0"
warn_at = 80
reserve = 15
allow_extra_usage = true
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Usage != (Usage{Poll: 0, WarnAt: 80, Reserve: 15, AllowExtraUsage: true}) {
		t.Fatalf("usage %+v", c.Usage)
	}
	if got := c.Providers[Anthropic].UsageURL; got != "http://127.0.0.1:9999/api/oauth/usage" {
		t.Fatalf("usage_url %q", got)
	}
	d, err := Parse("config.toml", []byte(`
[providers.anthropic]
base_url = "http://127.0.0.1:1234"
[providers.openai]
chatgpt_base_url = "http://127.0.0.1:1234/backend-api/codex"
`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Providers[Anthropic].UsageURL != "http://127.0.0.1:1234/api/oauth/usage" || d.Providers[OpenAI].UsageURL != "http://127.0.0.1:1234/backend-api/wham/usage" {
		t.Fatalf("usage URLs follow the base URLs: %q %q", d.Providers[Anthropic].UsageURL, d.Providers[OpenAI].UsageURL)
	}
	for _, bad := range []struct{ text, key string }{
		{"[usage]\npoll = \"often\"", "usage.poll"},
		{"[usage]\npoll = \"5s\"", "usage.poll"},
		{"[usage]\nwarn_at = 0", "usage.warn_at"},
		{"[usage]\nwarn_at = 101", "usage.warn_at"},
		{"[usage]\nreserve = 100", "usage.reserve"},
		{"[usage]\nreserve = -1", "usage.reserve"},
		{"[usage]\nresrve = 10", "usage.resrve"},
		{"[providers.anthropic]\nusage_url = \"ftp://x\"", "providers.anthropic.usage_url"},
		{"[providers.zai]\nwire = \"anthropic\"\nbase_url = \"https://z.ai\"\nusage_url = \"https://z.ai/u\"", "providers.zai.usage_url"},
	} {
		_, err := Parse("config.toml", []byte(bad.text))
		if err == nil || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%q: error %v, want one naming %s", bad.text, err, bad.key)
		}
	}
}
