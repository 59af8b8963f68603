package toolsetup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

var target = Target{Base: "http://127.0.0.1:8787", Key: "sp-test-key"}

func testEnv(t *testing.T) (Env, string) {
	t.Helper()
	home := t.TempDir()
	return Env{Home: home, Getenv: func(string) string { return "" }}, t.TempDir()
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What each tool's file looks like before setup, as a person keeps it:
// other settings, and comments where the format has them.
var existing = map[string]map[string]string{
	"claude-code": {".claude/settings.json": "{\n  \"model\": \"opus\",\n  \"env\": {\n    \"DISABLE_TELEMETRY\": \"1\"\n  },\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls:*)\"\n    ]\n  }\n}\n"},
	"codex":       {".codex/config.toml": "# my codex settings\nmodel = \"gpt-5.1\" # the one I like\napproval_policy = \"on-request\"\n\n[profiles.fast]\nmodel = \"gpt-5-mini\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n"},
	"gemini-cli": {
		".gemini/settings.json": "{\n  \"ui\": {\n    \"theme\": \"GitHub\"\n  },\n  \"security\": {\n    \"auth\": {\n      \"selectedType\": \"oauth-personal\"\n    }\n  }\n}\n",
		".gemini/.env":          "# work project\nGOOGLE_CLOUD_PROJECT=my-project\nexport GEMINI_API_KEY=old\n",
	},
	"opencode": {".config/opencode/opencode.json": `{"$schema":"https://opencode.ai/config.json","theme":"tokyonight","provider":{"openai":{"models":{"gpt-5":{}}}}}`},
	"continue": {".continue/config.yaml": "# Continue settings\nname: My Config\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: local\n    provider: ollama # on my box\n    model: llama3\ncontext:\n  - provider: code\n"},
	"cline":    {".cline/data/settings/providers.json": "{\n  \"version\": 1,\n  \"lastUsedProvider\": \"anthropic\",\n  \"modes\": {},\n  \"providers\": {\n    \"anthropic\": {\n      \"settings\": {\n        \"provider\": \"anthropic\",\n        \"apiKey\": \"sk-ant-mine\"\n      },\n      \"updatedAt\": \"2026-11-01T10:00:00.000Z\",\n      \"tokenSource\": \"manual\"\n    }\n  }\n}\n"},
}

// What must survive setup in each file: the other settings and comments.
var survives = map[string][]string{
	"claude-code": {`"model": "opus"`, `"DISABLE_TELEMETRY": "1"`, `"Bash(ls:*)"`},
	"codex":       {"# my codex settings", `model = "gpt-5.1" # the one I like`, "[profiles.fast]", "[mcp_servers.docs]", `command = "docs-mcp"`},
	"gemini-cli":  {`"theme": "GitHub"`, "# work project", "GOOGLE_CLOUD_PROJECT=my-project"},
	"opencode":    {`"theme":"tokyonight"`, `"gpt-5":{}`},
	"continue":    {"# Continue settings", "name: My Config", "provider: ollama # on my box", "context:"},
	"cline":       {`"sk-ant-mine"`, `"2026-11-01T10:00:00.000Z"`},
}

func TestSetupKeepsEveryOtherSetting(t *testing.T) {
	for _, tool := range Tools() {
		t.Run(tool, func(t *testing.T) {
			env, home := testEnv(t)
			for rel, body := range existing[tool] {
				write(t, filepath.Join(env.Home, rel), body)
			}
			p, err := Prepare(tool, env, target)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(p, home, time.Now()); err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			for rel := range existing[tool] {
				all.WriteString(read(t, filepath.Join(env.Home, rel)))
			}
			for _, want := range survives[tool] {
				if !strings.Contains(all.String(), want) {
					t.Errorf("%q was lost:\n%s", want, all.String())
				}
			}
			checkPointed(t, tool, env)
		})
	}
}

// checkPointed reads each file as the tool would and checks it now names
// subpool's address and key.
func checkPointed(t *testing.T, tool string, env Env) {
	t.Helper()
	base, key := target.Base, target.Key
	get := func(rel string) map[string]any {
		var v map[string]any
		if err := json.Unmarshal([]byte(read(t, filepath.Join(env.Home, rel))), &v); err != nil {
			t.Fatalf("%s is not JSON after setup: %v", rel, err)
		}
		return v
	}
	dig := func(v any, path ...string) any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	switch tool {
	case "claude-code":
		v := get(".claude/settings.json")
		if dig(v, "env", "ANTHROPIC_BASE_URL") != base || dig(v, "env", "ANTHROPIC_AUTH_TOKEN") != key {
			t.Errorf("env not set: %v", v["env"])
		}
	case "codex":
		var c struct {
			ModelProvider  string                       `toml:"model_provider"`
			ModelProviders map[string]map[string]string `toml:"model_providers"`
		}
		if _, err := toml.Decode(read(t, filepath.Join(env.Home, ".codex/config.toml")), &c); err != nil {
			t.Fatal(err)
		}
		sp := c.ModelProviders["subpool"]
		if c.ModelProvider != "subpool" || sp["base_url"] != base+"/v1" || sp["experimental_bearer_token"] != key || sp["wire_api"] != "responses" {
			t.Errorf("codex not pointed: %+v", c)
		}
	case "gemini-cli":
		if dig(get(".gemini/settings.json"), "security", "auth", "selectedType") != "gemini-api-key" {
			t.Error("auth type not set")
		}
		envFile := read(t, filepath.Join(env.Home, ".gemini/.env"))
		if !strings.Contains(envFile, "GOOGLE_GEMINI_BASE_URL="+base+"\n") || !strings.Contains(envFile, "GEMINI_API_KEY="+key+"\n") || strings.Contains(envFile, "old") {
			t.Errorf(".env:\n%s", envFile)
		}
	case "opencode":
		v := get(".config/opencode/opencode.json")
		for _, prov := range []string{"anthropic", "openai"} {
			if dig(v, "provider", prov, "options", "baseURL") != base+"/v1" || dig(v, "provider", prov, "options", "apiKey") != key {
				t.Errorf("%s not pointed: %v", prov, v["provider"])
			}
		}
	case "continue":
		var c struct {
			Models []map[string]string `yaml:"models"`
		}
		if err := yaml.Unmarshal([]byte(read(t, filepath.Join(env.Home, ".continue/config.yaml"))), &c); err != nil {
			t.Fatal(err)
		}
		last := c.Models[len(c.Models)-1]
		if last["name"] != "subpool" || last["apiBase"] != base+"/v1" || last["apiKey"] != key || last["model"] == "" {
			t.Errorf("continue not pointed: %v", c.Models)
		}
	case "cline":
		v := get(".cline/data/settings/providers.json")
		s := dig(v, "providers", "openai-compatible", "settings")
		if dig(s, "baseUrl") != base+"/v1" || dig(s, "apiKey") != key || v["lastUsedProvider"] != "openai-compatible" {
			t.Errorf("cline not pointed: %v", v)
		}
	default:
		t.Fatalf("no check for %s", tool)
	}
}

func TestUndoGivesTheOriginalBytesBack(t *testing.T) {
	for _, tool := range Tools() {
		t.Run(tool, func(t *testing.T) {
			env, home := testEnv(t)
			for rel, body := range existing[tool] {
				write(t, filepath.Join(env.Home, rel), body)
			}
			setupTwice(t, tool, env, home)
			if _, err := Undo(tool, home); err != nil {
				t.Fatal(err)
			}
			for rel, body := range existing[tool] {
				path := filepath.Join(env.Home, rel)
				if got := read(t, path); got != body {
					t.Errorf("%s after undo:\n%q\nwant\n%q", rel, got, body)
				}
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
					t.Errorf("%s mode %v after undo, want 0644", rel, st.Mode().Perm())
				}
				if left, _ := filepath.Glob(path + ".subpool-backup-*"); len(left) != 0 {
					t.Errorf("backups left: %v", left)
				}
			}
			if _, err := Undo(tool, home); err == nil {
				t.Error("a second undo found something to undo")
			}
		})
	}
}

// Setup run twice (the key changed in between) still undoes to the
// original, not to the first setup's file.
func setupTwice(t *testing.T, tool string, env Env, home string) {
	t.Helper()
	for i, key := range []string{"sp-first", "sp-second"} {
		p, err := Prepare(tool, env, Target{Base: target.Base, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(p, home, time.Date(2026, 12, 7, 12, i, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUndoRemovesFilesSetupCreated(t *testing.T) {
	for _, tool := range Tools() {
		t.Run(tool, func(t *testing.T) {
			env, home := testEnv(t)
			p, err := Prepare(tool, env, target)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(p, home, time.Now()); err != nil {
				t.Fatal(err)
			}
			checkPointed(t, tool, env)
			for _, c := range p.Changes {
				if st, err := os.Stat(c.Path); err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v, mode %v; a new file holding a key must be 0600", c.Path, err, st.Mode().Perm())
				}
			}
			if _, err := Undo(tool, home); err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Changes {
				if _, err := os.Stat(c.Path); !os.IsNotExist(err) {
					t.Errorf("%s still there after undo", c.Path)
				}
			}
		})
	}
}

func TestAFileItCannotParseIsLeftAlone(t *testing.T) {
	cases := []struct{ tool, rel, body string }{
		{"claude-code", ".claude/settings.json", "{\n  // my comment\n  \"model\": \"opus\"\n}\n"},
		{"claude-code", ".claude/settings.json", "[1, 2]\n"},
		{"gemini-cli", ".gemini/settings.json", "{\"ui\": {\"theme\": \"x\",}}"},
		{"codex", ".codex/config.toml", "model = \"gpt-5\n[broken\n"},
		{"continue", ".continue/config.yaml", "models:\n  - name: a\n   bad indent: [\n"},
		{"cline", ".cline/data/settings/providers.json", "{\"version\": 1"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			env, home := testEnv(t)
			path := filepath.Join(env.Home, c.rel)
			write(t, path, c.body)
			_, err := Prepare(c.tool, env, target)
			if err == nil {
				t.Fatal("an unparseable file was accepted")
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, path) || !strings.Contains(msg, "nothing was changed") {
				t.Errorf("want one line naming the file and saying nothing changed, got %q", msg)
			}
			if read(t, path) != c.body {
				t.Error("the file was touched")
			}
			if left, _ := filepath.Glob(path + ".subpool-backup-*"); len(left) != 0 {
				t.Errorf("backups made: %v", left)
			}
			if _, err := os.Stat(filepath.Join(home, recordFile)); !os.IsNotExist(err) {
				t.Error("a record was written")
			}
		})
	}
}

func TestUndoLeavesAFileChangedSince(t *testing.T) {
	env, home := testEnv(t)
	path := filepath.Join(env.Home, ".codex/config.toml")
	write(t, path, existing["codex"][".codex/config.toml"])
	p, err := Prepare("codex", env, target)
	if err != nil {
		t.Fatal(err)
	}
	backups, err := Apply(p, home, time.Now())
	if err != nil || len(backups) != 1 {
		t.Fatalf("backups %v, %v", backups, err)
	}
	edited := read(t, path) + "\n[profiles.slow]\nmodel = \"o3\"\n"
	write(t, path, edited)
	_, err = Undo("codex", home)
	if err == nil || !strings.Contains(err.Error(), backups[0]) {
		t.Fatalf("want a refusal naming the backup %s, got %v", backups[0], err)
	}
	if read(t, path) != edited {
		t.Error("the person's edit was undone")
	}
}

// A file the tool wrote itself (JSON.stringify with two spaces) differs
// only in the lines setup changes, so the person's diff stays readable.
func TestToolWrittenJSONKeepsItsLayout(t *testing.T) {
	before := existing["gemini-cli"][".gemini/settings.json"]
	after, err := setJSON([]byte(before), geminiSettingsSets(nil, target))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(before, `"oauth-personal"`, `"gemini-api-key"`, 1)
	if string(after) != want {
		t.Errorf("got\n%s\nwant\n%s", after, want)
	}
	p := Plan{Changes: []Change{{Path: "settings.json", Before: []byte(before), After: after}}}
	d := p.Diff()
	if !strings.Contains(d, `-       "selectedType": "oauth-personal"`) || !strings.Contains(d, `+       "selectedType": "gemini-api-key"`) || strings.Contains(d, "theme") {
		t.Errorf("diff:\n%s", d)
	}
}

func TestCodexProviderLineReplacedNotDoubled(t *testing.T) {
	before := "model_provider = \"openai\"\nmodel = \"gpt-5\"\n\n[model_providers.subpool]\nname = \"old\"\nbase_url = \"http://127.0.0.1:9999/v1\"\n\n[model_providers.subpool.http_headers]\nX = \"y\"\n\n[tui]\nnotifications = true\n"
	after, err := codexEdit([]byte(before), target)
	if err != nil {
		t.Fatal(err)
	}
	s := string(after)
	if strings.Count(s, "model_provider =") != 1 || strings.Count(s, "[model_providers.subpool]") != 1 || strings.Contains(s, "9999") || strings.Contains(s, "http_headers") || !strings.Contains(s, "[tui]\nnotifications = true") {
		t.Errorf("got:\n%s", s)
	}
}

func TestUnknownTool(t *testing.T) {
	env, _ := testEnv(t)
	if _, err := Prepare("vim", env, target); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("got %v", err)
	}
}

// opencode adds its $schema to the file on its first run: undo then takes
// out only subpool's members and keeps the tool's change.
func TestUndoOfAChangedJSONFileTakesOutOnlySetupsMembers(t *testing.T) {
	for _, c := range []struct {
		name, tool, rel, before, toolAdds, want string
	}{
		{"opencode adds its schema", "opencode", ".config/opencode/opencode.json",
			"{\n  \"theme\": \"opencode\"\n}\n", `"$schema"`,
			"{\n  \"theme\": \"opencode\",\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n"},
		{"claude code writes a file setup made", "claude-code", ".claude/settings.json",
			"", `"feedbackSurveyState"`,
			"{\n  \"feedbackSurveyState\": \"https://opencode.ai/config.json\"\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, home := testEnv(t)
			path := filepath.Join(env.Home, c.rel)
			if c.before != "" {
				write(t, path, c.before)
			}
			p, err := Prepare(c.tool, env, target)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(p, home, time.Now()); err != nil {
				t.Fatal(err)
			}
			// The tool adds a member of its own, laid out as it lays it out.
			var v map[string]any
			json.Unmarshal([]byte(read(t, path)), &v)
			v[strings.Trim(c.toolAdds, `"`)] = "https://opencode.ai/config.json"
			b, _ := json.MarshalIndent(v, "", "  ")
			write(t, path, string(b)+"\n")
			done, err := Undo(c.tool, home)
			if err != nil || len(done) != 1 || !strings.Contains(done[0], "changes are kept") {
				t.Fatalf("undo: %v %v", done, err)
			}
			got := read(t, path)
			var after, want map[string]any
			json.Unmarshal([]byte(got), &after)
			json.Unmarshal([]byte(c.want), &want)
			if len(after) != len(want) || strings.Contains(got, target.Key) || strings.Contains(got, "8787") || !strings.Contains(got, c.toolAdds) {
				t.Errorf("after undo:\n%s\nwant the members of\n%s", got, c.want)
			}
		})
	}
}
