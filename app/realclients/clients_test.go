//go:build unix

package realclients

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	installed "github.com/subpool/subpool/internal/realclients"
)

// exports reads the `export K=V` lines `subpool env` prints.
func exports(printed string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(printed, "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "export "), "="); ok && !strings.HasPrefix(l, "#") && strings.HasPrefix(strings.TrimSpace(l), "export ") {
			m[k] = strings.Trim(v, `'"`)
		}
	}
	return m
}

// claude runs `claude -p PROMPT [args]` set up the way `subpool env
// claude-code` says.
func (s *served) claude(t *testing.T, timeout time.Duration, prompt string, args ...string) result {
	t.Helper()
	bin := clientBin(t, "claude")
	printed, _ := s.env("claude-code")
	p := newPerson(t)
	for k, v := range exports(printed) {
		p.env[k] = v
	}
	return p.run(t, timeout, bin, append([]string{"-p", prompt}, args...)...)
}

// codex runs `codex exec --skip-git-repo-check PROMPT` with the custom
// provider `subpool env codex` prints, written to $CODEX_HOME/config.toml.
func (s *served) codex(t *testing.T, timeout time.Duration, prompt string, args ...string) result {
	t.Helper()
	bin := clientBin(t, "codex")
	printed, key := s.env("codex")
	p := newPerson(t)
	var cfg []string
	for _, l := range strings.Split(printed, "\n") {
		if strings.HasPrefix(l, "export ") {
			k, v, _ := strings.Cut(strings.TrimPrefix(l, "export "), "=")
			p.env[k] = strings.Trim(v, `'"`)
			continue
		}
		if !strings.HasPrefix(l, "#") {
			cfg = append(cfg, l)
		}
	}
	if !strings.Contains(strings.Join(cfg, "\n"), "base_url") || !strings.Contains(printed, key) {
		t.Fatalf("subpool env codex printed no provider:\n%s", printed)
	}
	if err := os.WriteFile(filepath.Join(p.env["CODEX_HOME"], "config.toml"), []byte(strings.Join(cfg, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p.run(t, timeout, bin, append([]string{"exec", "--skip-git-repo-check"}, append(args, prompt)...)...)
}

// opencode runs `opencode run PROMPT` with the provider options `subpool
// env opencode` prints, as ~/.config/opencode/opencode.json.
func (s *served) opencode(t *testing.T, timeout time.Duration, model, prompt string) result {
	t.Helper()
	bin := clientBin(t, "opencode")
	printed, _ := s.env("opencode")
	p := newPerson(t)
	var js []string
	for _, l := range strings.Split(printed, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "//") {
			js = append(js, l)
		}
	}
	var probe map[string]any
	if err := json.Unmarshal([]byte(strings.Join(js, "\n")), &probe); err != nil {
		t.Fatalf("subpool env opencode printed no JSON (%v):\n%s", err, printed)
	}
	dir := filepath.Join(p.env["XDG_CONFIG_HOME"], "opencode")
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), []byte(strings.Join(js, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p.run(t, timeout, bin, "run", "-m", model, prompt)
}

// sdkAnswer is what the SDK scripts in testdata print: the answer, or the
// error the SDK threw.
type sdkAnswer struct {
	OK         bool    `json:"ok"`
	Text       string  `json:"text"`
	Tool       string  `json:"tool"` // SDK_CHAT: the tool call made, and its arguments
	Args       string  `json:"args"`
	Credential string  `json:"credential"`
	Attempts   string  `json:"attempts"`
	Status     int     `json:"status"`
	Name       string  `json:"name"`
	Message    string  `json:"message"`
	Retry      string  `json:"should_retry"`
	Ms         float64 `json:"ms"`
}

// sdk runs testdata/SCRIPT with node: the official SDK, its defaults
// (retries included), pointed at subpool by the environment variables a
// person sets; env adds the script's own variables, as name, value pairs.
func (s *served) sdk(t *testing.T, timeout time.Duration, script, model string, stream bool, env ...string) (sdkAnswer, result) {
	t.Helper()
	node := nodeBin(t)
	dir, err := installed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	p := newPerson(t)
	p.env["NODE_PATH"] = filepath.Join(dir, "node_modules")
	p.env["SDK_MODEL"] = model
	if stream {
		p.env["SDK_STREAM"] = "1"
	}
	for i := 0; i+1 < len(env); i += 2 {
		p.env[env[i]] = env[i+1]
	}
	printed, _ := s.env("shell")
	vars := exports(printed)
	for _, k := range []string{"ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"} {
		p.env[k] = vars[k]
	}
	// The Anthropic SDK reads ANTHROPIC_AUTH_TOKEN as a bearer token too;
	// a person with an SDK app sets the key variable.
	p.env["ANTHROPIC_API_KEY"] = vars["ANTHROPIC_AUTH_TOKEN"]
	r := p.run(t, timeout, node, abs)
	var a sdkAnswer
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "{") {
			if json.Unmarshal([]byte(l), &a) != nil {
				t.Fatalf("%s printed no answer: %s", script, r)
			}
		}
	}
	if !a.OK && a.Name == "" { // killed at the timeout: no answer printed
		a.Ms = float64(r.took.Milliseconds())
	}
	return a, r
}

// took is how long the SDK call itself took (node's start-up left out),
// or the whole run when the script was killed.
func (a sdkAnswer) took() time.Duration { return time.Duration(a.Ms * float64(time.Millisecond)) }

// geminiMode is which of Gemini CLI's two setups `subpool env gemini-cli`
// prints a run follows.
type geminiMode int

const (
	// geminiAPI is the Gemini API mode: the export lines, and the
	// selectedType setting the first comment names (without it Gemini CLI
	// 0.61.0 takes GOOGLE_GEMINI_BASE_URL for a "gateway" it cannot run
	// and exits 41).
	geminiAPI geminiMode = iota
	// geminiLogin is "Login with Google" (Code Assist): the commented
	// export lines of the second block, uncommented.
	geminiLogin
)

func (m geminiMode) String() string {
	if m == geminiLogin {
		return "login with google"
	}
	return "gemini api key"
}

// geminiSettings is the JSON object the API block's comment says to put in
// ~/.gemini/settings.json.
var geminiSettings = regexp.MustCompile(`settings\.json:\s*(\{.*\})\s*$`)

// gemini runs `gemini -m gemini-2.5-flash -p PROMPT --output-format json`
// set up the way `subpool env gemini-cli` says for mode, and reads what it
// printed.
func (s *served) gemini(t *testing.T, timeout time.Duration, mode geminiMode, prompt string) (geminiAnswer, result) {
	t.Helper()
	r := s.geminiRun(t, timeout, mode, "-p", prompt, "--output-format", "json")
	return readGeminiAnswer(r), r
}

// geminiRun runs `gemini -m gemini-2.5-flash ARGS` as a fresh person set up
// for mode. The model is named so that the CLI's auto router (a classifier
// call before every turn, with a model of its choosing) stays out of the
// count of requests.
func (s *served) geminiRun(t *testing.T, timeout time.Duration, mode geminiMode, args ...string) result {
	t.Helper()
	bin := clientBin(t, "gemini")
	printed, key := s.env("gemini-cli")
	p := newPerson(t)
	settings := map[string]any{}
	vars := map[string]string{}
	if mode == geminiAPI {
		vars = exports(printed)
		for _, l := range strings.Split(printed, "\n") {
			if m := geminiSettings.FindStringSubmatch(l); m != nil {
				if err := json.Unmarshal([]byte(m[1]), &settings); err != nil {
					t.Fatalf("subpool env gemini-cli: the settings it names are not JSON (%v):\n%s", err, printed)
				}
			}
		}
		if len(settings) == 0 {
			t.Fatalf("subpool env gemini-cli names no settings.json for the API mode:\n%s", printed)
		}
	} else {
		for _, l := range strings.Split(printed, "\n") {
			if rest, ok := strings.CutPrefix(l, "# export "); ok {
				k, v, _ := strings.Cut(rest, "=")
				vars[k] = strings.Trim(v, `'"`)
			}
		}
	}
	if len(vars) == 0 || !strings.Contains(strings.Join(slices.Collect(maps.Values(vars)), " "), key) {
		t.Fatalf("subpool env gemini-cli printed no %s setup:\n%s", mode, printed)
	}
	maps.Copy(p.env, vars)
	maps.Copy(p.env, s.personEnv)
	// A person's choices, not subpool's setup: trust the folder it runs in
	// (else -p exits 55) and send no usage statistics to Google (the
	// machine is offline; the CLI would POST them to play.googleapis.com).
	p.env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
	settings["privacy"] = map[string]any{"usageStatisticsEnabled": false}
	dir := filepath.Join(p.home, ".gemini")
	os.MkdirAll(dir, 0o700)
	b, _ := json.Marshal(settings)
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p.run(t, timeout, bin, append([]string{"-m", "gemini-2.5-flash"}, args...)...)
}

// geminiAnswer is what `gemini --output-format json` printed: the answer
// and its stats on stdout, or the error object on stderr.
type geminiAnswer struct {
	Response string `json:"response"`
	Stats    struct {
		Models map[string]struct {
			API struct {
				TotalRequests int `json:"totalRequests"`
				TotalErrors   int `json:"totalErrors"`
			} `json:"api"`
		} `json:"models"`
	} `json:"stats"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// requests is the model requests the CLI counted for the turn.
func (a geminiAnswer) requests() int {
	n := 0
	for _, m := range a.Stats.Models {
		n += m.API.TotalRequests
	}
	return n
}

func readGeminiAnswer(r result) geminiAnswer {
	var a geminiAnswer
	for _, out := range []string{r.stdout, r.stderr} {
		for i := strings.Index(out, "{"); i >= 0; {
			if json.NewDecoder(strings.NewReader(out[i:])).Decode(&a) == nil && (a.Response != "" || a.Error != nil) {
				return a
			}
			j := strings.Index(out[i+1:], "\n{")
			if j < 0 {
				break
			}
			i += j + 2
		}
	}
	return a
}
