package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadCreatesCommentedDefaults(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", FileName)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("default config not written: %v", err)
	}
	if !strings.Contains(string(b), "# Stepped cooldown") {
		t.Errorf("default config lacks its comments")
	}
	// The written file must parse to exactly the defaults.
	again, err := Parse(p, b)
	if err != nil {
		t.Fatalf("default text does not parse: %v", err)
	}
	if again.Listen != c.Listen || len(again.Ladder) != 3 || again.Ladder[2] != 5*time.Minute || again.CapacityMax != 5*time.Minute {
		t.Errorf("default text and Default() disagree: %+v", again)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestParseCustomProvider(t *testing.T) {
	c, err := Parse("c.toml", []byte(`
[providers.zai]
wire = "anthropic"
base_url = "https://api.z.ai/api/anthropic/"
limit_scope = "egress"
[cooldown]
ladder = ["10s", "1m"]
[wait]
capacity_max = "2h"
`))
	if err != nil {
		t.Fatal(err)
	}
	z := c.Providers["zai"]
	if z.Wire != "anthropic" || z.BaseURL != "https://api.z.ai/api/anthropic" || z.LimitScope != "egress" {
		t.Errorf("zai = %+v", z)
	}
	if len(c.Ladder) != 2 || c.Ladder[1] != time.Minute {
		t.Errorf("ladder = %v", c.Ladder)
	}
	if c.CapacityMax != time.Hour {
		t.Errorf("capacity_max over an hour must be capped at 1h, got %v", c.CapacityMax)
	}
	if got := c.ProviderNames(); strings.Join(got, ",") != "anthropic,openai,google,zai" {
		t.Errorf("ProviderNames = %v", got)
	}
}

// wire = "openai-chat" is an OpenAI provider that serves only Chat
// Completions; the built-in openai provider cannot be made one.
func TestParseChatOnlyProvider(t *testing.T) {
	c, err := Parse("c.toml", []byte("[providers.deepseek]\nwire = \"openai-chat\"\nbase_url = \"https://api.deepseek.com\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Providers["deepseek"]; d.Wire != "openai" || !d.ChatOnly || c.Providers["openai"].ChatOnly {
		t.Errorf("deepseek = %+v", d)
	}
	if _, err := Parse("c.toml", []byte("[providers.openai]\nwire = \"openai-chat\"\n")); err == nil || !strings.Contains(err.Error(), "providers.openai.wire") {
		t.Errorf("built-in openai made chat-only: %v", err)
	}
}

// Every bad value is one line that names its key.
func TestParseErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		toml, key string
	}{
		{`listen = "0.0.0.0:8787"`, "listen"},
		{"listen = \"0.0.0.0:8787\"\nallow_remote = true\nrequire_client_key = false", "allow_remote"},
		{`listen = "nonsense"`, "listen"},
		{"[cooldown]\nladder = [\"30s\", \"6x\"]", "cooldown.ladder[1]"},
		{"[cooldown]\nreset_after = \"-1m\"", "cooldown.reset_after"},
		{"[wait]\nsole_provider_max = \"soon\"", "wait.sole_provider_max"},
		{"[wait]\ncapacity_max = \"NaN\"", "wait.capacity_max"},
		{"[providers.zai]\nwire = \"grpc\"\nbase_url = \"https://x\"", "providers.zai.wire"},
		{"[providers.zai]\nwire = \"openai\"", "providers.zai.base_url"},
		{"[providers.zai]\nwire = \"openai\"\nbase_url = \"ftp://x\"", "providers.zai.base_url"},
		{"[providers.zai]\nwire = \"openai\"\nbase_url = \"https://x\"\nlimit_scope = \"ip\"", "providers.zai.limit_scope"},
		{"[providers.anthropic]\nwire = \"openai\"", "providers.anthropic.wire"},
		{"[keychain]\nbackend = \"kwallet\"", "keychain.backend"},
		{`max_body = "lots"`, "max_body"},
		{`max_body = 10`, "max_body"},
		{`lisen = "127.0.0.1:1"`, "lisen"},
		{"[retry]\nmax_attempts = 0", "retry.max_attempts"},
		{"[retry]\ntransient = [\"2h\"]", "retry.transient[0]"},
		{`allow_origins = ["localhost:3000"]`, "allow_origins[0]"},
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

func TestParseSyntaxErrorIsOneLine(t *testing.T) {
	_, err := Parse("config.toml", []byte("listen = \n"))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("got %v", err)
	}
}

func TestRemoteListenNeedsOptIn(t *testing.T) {
	c, err := Parse("c", []byte("listen = \"0.0.0.0:9000\"\nallow_remote = true"))
	if err != nil || c.Listen != "0.0.0.0:9000" || !c.RequireClientKey {
		t.Fatalf("c=%+v err=%v", c, err)
	}
	for _, h := range []string{"127.0.0.1", "::1", "[::1]", "localhost", "127.5.0.1"} {
		if !IsLoopback(h) {
			t.Errorf("IsLoopback(%q) = false", h)
		}
	}
	if IsLoopback("evil.example") || IsLoopback("10.0.0.1") {
		t.Error("non-loopback accepted")
	}
}
