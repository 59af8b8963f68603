package app

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/subpool/subpool/internal/sim"
)

// setup writes Codex's config.toml so the key in it is accepted by the
// running proxy, keeps the person's settings, and --undo gives the bytes
// back; --dry-run writes nothing.
func TestSetupCodexReachesTheProxyAndUndoes(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, addr := newHome(t, up, "")
	cli(t, keyA, "add-key", "openai", "--label", "alpha", "--home", home)
	startHome(t, home, &logBuf{})
	person := t.TempDir()
	t.Setenv("HOME", person)
	t.Setenv("CODEX_HOME", "")
	path := filepath.Join(person, ".codex", "config.toml")
	original := "# mine\nmodel = \"gpt-5.1\"\n\n[tui]\nnotifications = true\n"
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(original), 0o644)

	code, out, errs := cli(t, "", "setup", "codex", "--dry-run", "--home", home)
	if code != 0 || !strings.Contains(out, `+ model_provider = "subpool"`) || !strings.Contains(out, "nothing was written") {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if got, _ := os.ReadFile(path); string(got) != original {
		t.Fatal("--dry-run wrote the file")
	}

	code, out, errs = cli(t, "", "setup", "codex", "--home", home)
	if code != 0 || !strings.Contains(out, "backed up "+path+".subpool-backup-") {
		t.Fatalf("setup: %d %q %q", code, out, errs)
	}
	var cfg struct {
		Model          string `toml:"model"`
		ModelProviders map[string]struct {
			BaseURL string `toml:"base_url"`
			Token   string `toml:"experimental_bearer_token"`
		} `toml:"model_providers"`
	}
	if _, err := toml.DecodeFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	sp := cfg.ModelProviders["subpool"]
	if cfg.Model != "gpt-5.1" || sp.BaseURL != "http://"+addr+"/v1" {
		t.Fatalf("config after setup: %+v", cfg)
	}
	req, _ := http.NewRequest(http.MethodPost, sp.BaseURL+"/responses", strings.NewReader(`{"model":"gpt-5.1","input":"hi"}`))
	req.Header.Set("Authorization", "Bearer "+sp.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the key setup wrote was answered %d", resp.StatusCode)
	}

	if code, out, errs = cli(t, "", "setup", "codex", "--undo", "--home", home); code != 0 {
		t.Fatalf("undo: %d %q %q", code, out, errs)
	}
	if got, _ := os.ReadFile(path); string(got) != original {
		t.Fatalf("after undo:\n%s", got)
	}
}

func TestSetupRefusals(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	startHome(t, home, &logBuf{})
	person := t.TempDir()
	t.Setenv("HOME", person)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	path := filepath.Join(person, ".claude", "settings.json")
	broken := "{\n  // a comment Claude Code would not write\n  \"model\": \"opus\"\n}\n"
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(broken), 0o600)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"setup", "claude-code"}, 1, "nothing was changed"},
		{[]string{"setup", "vim"}, 2, "unknown tool"},
		{[]string{"setup"}, 2, "name one tool"},
		{[]string{"setup", "codex", "--undo"}, 1, "nothing to undo"},
	} {
		code, _, errs := cli(t, "", append(c.args, "--home", home)...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want exit %d and one line with %q", c.args, code, errs, c.code, c.want)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != broken {
		t.Error("a file setup cannot parse was changed")
	}
}
