//go:build unix

package realclients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/subpool/subpool/internal/freeport"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	installed "github.com/subpool/subpool/internal/realclients"
	"github.com/subpool/subpool/internal/sim"
)

// binDir holds the subpool binary TestMain's first user builds.
var binDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "subpool-realclients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "realclients:", err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// EnvSubpool names an already built subpool binary to run instead of
// building the module's: how the suite shows what an older commit did
// (git archive it, CGO_ENABLED=0 go build, point this at the result).
const EnvSubpool = "SUBPOOL_REALCLIENTS_SUBPOOL"

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// subpoolBin builds `subpool` once for the whole suite, headless and
// without -race (make test runs the tests with it; the binary under test is
// what a person runs).
func subpoolBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if b := os.Getenv(EnvSubpool); b != "" {
			buildBin = b
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = errors.New("go is not on PATH: cannot build subpool")
			return
		}
		out, err := exec.Command(goBin, "env", "GOMOD").Output()
		mod := strings.TrimSpace(string(out))
		if err != nil || mod == "" || mod == os.DevNull {
			buildErr = fmt.Errorf("cannot find the module root (go env GOMOD: %v)", err)
			return
		}
		buildBin = filepath.Join(binDir, "subpool")
		cmd := exec.Command(goBin, "build", "-o", buildBin, ".")
		cmd.Dir = filepath.Dir(mod)
		cmd.Env = append(withoutEnv(os.Environ(), "GOFLAGS"), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build subpool: %v: %s", err, strings.TrimSpace(string(b)))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// clientBin is an installed client command. A failed install fails the
// test with the installer's one line.
func clientBin(t *testing.T, name string) string {
	t.Helper()
	p, err := installed.Bin(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func nodeBin(t *testing.T) string {
	t.Helper()
	if _, err := installed.Dir(); err != nil {
		t.Fatal(err)
	}
	p, err := installed.Node()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			if strings.EqualFold(k, n) {
				drop = true
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// Fake secrets, shaped like the real ones so subpool and the clients
// treat them as such, and plainly not real.
func fakeKey(provider, name string) string {
	switch provider {
	case "anthropic":
		return "sk-ant-api03-subpool-realclients-test-" + name + "-000000000000"
	case "google":
		return "AIzaSy-subpool-realclients-test-" + name + "-000000"
	default:
		return "sk-proj-subpool-realclients-test-" + name + "-000000000000"
	}
}

// upstream is one scenario's simulated Anthropic + OpenAI + ChatGPT +
// Gemini API + Code Assist, with the OAuth token endpoints in front
// (sim.OAuthServer hands every model route to the Server).
type upstream struct {
	*sim.Server
	oa  *sim.OAuthServer
	url string
}

func newUpstream(t *testing.T, o sim.Options) *upstream {
	t.Helper()
	// Every scenario runs a client: a failed install fails it here, with
	// the installer's one line, before anything is started.
	if _, err := installed.Dir(); err != nil {
		t.Fatal(err)
	}
	s := sim.New(o)
	oa := s.OAuth(sim.OAuthOptions{Email: "person@example.com", Plan: "pro"})
	if err := oa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oa.Close(); s.Close() })
	return &upstream{Server: s, oa: oa, url: oa.URL()}
}

// modelCalls are the records of requests to the model routes (what a
// person pays for), leaving out model listings, usage polls and tokens.
func (u *upstream) modelCalls() []sim.Record {
	var out []sim.Record
	for _, r := range u.Requests() {
		switch r.Path {
		case "/v1/messages", "/v1/responses", "/v1/chat/completions", "/backend-api/codex/responses":
			out = append(out, r)
		default:
			if geminiModelPath(r.Path) {
				out = append(out, r)
			}
		}
	}
	return out
}

// callsBy counts the model calls carrying secret, and those of them the
// sim answered 200.
func (u *upstream) callsBy(secret string) (all, ok int) {
	for _, r := range u.modelCalls() {
		if r.Credential == secret {
			all++
			if r.Status == 200 {
				ok++
			}
		}
	}
	return all, ok
}

func (u *upstream) describe() string {
	var b strings.Builder
	for _, r := range u.modelCalls() {
		fmt.Fprintf(&b, "\n  %s %s?%s model=%s stream=%v status=%d cred=%s ua=%q", r.Time.Format("15:04:05.000"), r.Path, r.Query, r.Model, r.Stream, r.Status, short(r.Credential), r.Header.Get("User-Agent"))
		if p := requestProject(r); p != "" {
			fmt.Fprintf(&b, " project=%s", p)
		}
	}
	if b.Len() == 0 {
		return " (none)"
	}
	return b.String()
}

// geminiModelPath is a Gemini API or Code Assist generate call, the
// Google requests a person pays for (Code Assist's setup, quota and
// experiments calls are not).
func geminiModelPath(path string) bool {
	return strings.HasSuffix(path, ":generateContent") || strings.HasSuffix(path, ":streamGenerateContent")
}

// requestProject is the Cloud project a Code Assist call named ("" for
// the Gemini API, which names none).
func requestProject(r sim.Record) string {
	var v struct {
		Project string `json:"project"`
	}
	json.Unmarshal(r.Body, &v)
	return v.Project
}

func short(secret string) string {
	if len(secret) > 36 {
		return secret[:36] + "…"
	}
	return secret
}

// served is one `subpool serve` on its own home.
type served struct {
	t      *testing.T
	bin    string
	home   string
	addr   string
	url    string
	up     *upstream
	admin  string
	log    *lines
	cmd    *exec.Cmd
	exited chan struct{}
	// personEnv is set in every client run's environment besides what
	// subpool prints: a person's own choices (GOOGLE_GENAI_API_VERSION).
	personEnv map[string]string
}

// lines keeps a process's output for failure messages.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.l = append(l.l, s); l.mu.Unlock() }
func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

// apiKey is a credential added with `subpool add-key` before the proxy
// starts, in order (the pool tries equal credentials in the order added).
type apiKey struct{ provider, label, secret string }

// serve writes a home whose providers all point at up, adds keys with
// `subpool add-key`, starts `subpool serve` and waits for it to listen.
// extra is appended to config.toml.
func serve(t *testing.T, up *upstream, extra string, keys ...apiKey) *served {
	t.Helper()
	s := &served{t: t, bin: subpoolBin(t), home: t.TempDir(), up: up, log: &lines{}}
	u := up.url
	for attempt := 0; ; attempt++ {
		s.addr = freeport.Addr(t)
		cfg := fmt.Sprintf(`listen = %q
require_client_key = true

[keychain]
backend = "file"

[providers.anthropic]
base_url      = %q
token_url     = %q
authorize_url = %q
usage_url     = %q

[providers.openai]
base_url         = %q
chatgpt_base_url = %q
token_url        = %q
usage_url        = %q

[providers.google]
base_url        = %q
code_assist_url = %q
token_url       = %q
authorize_url   = %q
usage_url       = %q

[usage]
poll = "0s"
`, s.addr, u, u+"/v1/oauth/token", u+"/oauth/authorize", u+"/api/oauth/usage",
			u, u+"/backend-api/codex", u+"/oauth/token", u+"/backend-api/wham/usage",
			u, u, u+"/token", u+"/o/oauth2/v2/auth", u+"/v1internal:retrieveUserQuota") + extra
		if err := os.WriteFile(filepath.Join(s.home, "config.toml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if attempt == 0 {
			for _, k := range keys {
				out := s.cli(k.secret+"\n", "add-key", k.provider, "--label", k.label)
				if !strings.HasPrefix(out, "added ") {
					t.Fatalf("add-key %s: %q", k.label, out)
				}
			}
		}
		err := s.start()
		if err == nil {
			break
		}
		if attempt < 2 && strings.Contains(err.Error(), "in use") {
			continue // another process took the free port first
		}
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(s.home, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	s.admin = strings.TrimSpace(string(tok))
	return s
}

func (s *served) start() error {
	s.cmd = exec.Command(s.bin, "serve", "--home", s.home)
	s.cmd.Env = cleanEnv(nil)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return err
	}
	s.cmd.Stdout = io.Discard
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.exited = make(chan struct{})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			s.log.add(l)
			if _, rest, ok := strings.Cut(l, "listening on http://"); ok {
				select {
				case listening <- strings.Fields(rest)[0]:
				default:
				}
			}
		}
	}()
	go func() { s.cmd.Wait(); close(s.exited) }()
	cmd, exited := s.cmd, s.exited
	s.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if s.t.Failed() {
			s.t.Logf("subpool serve log:\n%s", s.log)
		}
	})
	select {
	case a := <-listening:
		if a != s.addr {
			return fmt.Errorf("subpool serve listens on %s, config says %s", a, s.addr)
		}
		s.url = "http://" + a
		return nil
	case <-s.exited:
		return fmt.Errorf("subpool serve exited at start: %s", s.log)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("subpool serve did not start listening in 30 s: %s", s.log)
	}
}

// cli runs one subpool verb on the home and returns its stdout; a
// failure fails the test.
func (s *served) cli(stdin string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command(s.bin, append(args, "--home", s.home)...)
	cmd.Env = cleanEnv(nil)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("subpool %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String()
}

var keyRe = regexp.MustCompile(`sp-[0-9a-f]{16,}`)

// env runs `subpool env TOOL` as a person setting up that tool does and
// returns what it printed and the client key in it.
func (s *served) env(tool string) (printed, key string) {
	s.t.Helper()
	printed = s.cli("", "env", tool)
	key = keyRe.FindString(printed)
	if key == "" || !strings.Contains(printed, s.addr) {
		s.t.Fatalf("subpool env %s printed no key or not this proxy's address:\n%s", tool, printed)
	}
	return printed, key
}

// addOAuth adds a subscription login through the admin API, as `subpool
// login` ends up doing, and returns its id.
func (s *served) addOAuth(provider, label string, g sim.OAuthTokens) string {
	s.t.Helper()
	secret := map[string]string{
		"access_token":  g.Access,
		"refresh_token": g.Refresh,
		"expires_at":    g.ExpiresAt.UTC().Format(time.RFC3339),
		"email":         g.Email,
	}
	if g.IDToken != "" {
		secret["id_token"] = g.IDToken
	}
	if g.AccountID != "" {
		secret["account_id"] = g.AccountID
	}
	if g.Project != "" { // a Google login's Code Assist project
		secret["project"] = g.Project
	}
	body, _ := json.Marshal(map[string]any{"provider": provider, "label": label, "kind": "oauth", "secret": secret})
	var added struct {
		ID string `json:"id"`
	}
	s.adminDo(http.MethodPost, "/subpool/v1/credentials", body, &added)
	if added.ID == "" {
		s.t.Fatal("admin API added a credential with no id")
	}
	return added.ID
}

// ids maps each credential's label to its id, from the admin status.
func (s *served) ids() map[string]string {
	s.t.Helper()
	var st struct {
		Providers []struct {
			Credentials []struct {
				ID    string `json:"id"`
				Label string `json:"label"`
			} `json:"credentials"`
		} `json:"providers"`
	}
	s.adminDo(http.MethodGet, "/subpool/v1/status", nil, &st)
	m := map[string]string{}
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			m[c.Label] = c.ID
		}
	}
	return m
}

func (s *served) adminDo(method, path string, body []byte, into any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("admin %s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			s.t.Fatalf("admin %s %s: %v: %s", method, path, err, b)
		}
	}
}

// cleanEnv is the environment of a process started by the suite: the
// PATH and locale of the test, none of the caller's provider settings or
// HTTP proxies, plus set.
func cleanEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "LANG", k == "LC_ALL", k == "TZ", k == "TMPDIR", k == "SYSTEMROOT":
			env = append(env, kv)
		}
	}
	env = append(env, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost", "SUBPOOL_HOME=/nonexistent-subpool-home")
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// person is a fresh user account for one client run: its own HOME, XDG
// dirs and tool config dirs, nothing shared with the machine's.
type person struct {
	home string
	env  map[string]string
}

func newPerson(t *testing.T) *person {
	t.Helper()
	h := t.TempDir()
	p := &person{home: h, env: map[string]string{
		"HOME":              h,
		"USERPROFILE":       h,
		"XDG_CONFIG_HOME":   filepath.Join(h, ".config"),
		"XDG_DATA_HOME":     filepath.Join(h, ".local", "share"),
		"XDG_STATE_HOME":    filepath.Join(h, ".local", "state"),
		"XDG_CACHE_HOME":    filepath.Join(h, ".cache"),
		"CLAUDE_CONFIG_DIR": filepath.Join(h, ".claude"),
		"CODEX_HOME":        filepath.Join(h, ".codex"),
		"TERM":              "dumb",
		"NO_COLOR":          "1",
		// Claude Code: no telemetry, update checks or other calls home.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		// opencode: no update check, models.dev fetch, plugin installs,
		// LSP downloads or sharing.
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_SHARE":           "1",
		"OPENCODE_DISABLE_CLAUDE_CODE":     "1",
	}}
	for _, d := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"} {
		if err := os.MkdirAll(p.env[d], 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// result is what one client run showed.
type result struct {
	stdout, stderr string
	took           time.Duration
	err            error // nil when the client exited 0
	timedOut       bool
}

func (r result) shown() string { return r.stdout + r.stderr }

func (r result) String() string {
	return fmt.Sprintf("exit %v after %s (timed out: %v)\n--- stdout\n%s\n--- stderr\n%s", r.err, r.took.Round(time.Millisecond), r.timedOut, r.stdout, tail(r.stderr, 4000))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// run starts one client command as p, in its home, and waits at most
// timeout for it; a client still running then is killed with its whole
// process group.
func (p *person) run(t *testing.T, timeout time.Duration, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = p.home
	cmd.Env = cleanEnv(p.env)
	cmd.Stdin = strings.NewReader("")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 3 * time.Second
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{took: time.Since(start), err: err, timedOut: ctx.Err() != nil}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind
	}
	r.stdout, r.stderr = out.String(), errb.String()
	return r
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// addKey runs `subpool add-key` against the running proxy (the verb goes
// through its admin API) and returns the new credential's id.
func (s *served) addKey(k apiKey) string {
	s.t.Helper()
	out := s.cli(k.secret+"\n", "add-key", k.provider, "--label", k.label)
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "added" {
		s.t.Fatalf("add-key %s: %q", k.label, out)
	}
	return f[1]
}

// clientRequests counts the requests the client made to subpool's model
// routes, from its request history (written in batches every 250 ms: read
// until two looks agree), and sums the upstream attempts subpool made for
// them.
func (s *served) clientRequests() (requests, attempts int) {
	s.t.Helper()
	count := func() (n, a int) {
		var page struct {
			Entries []struct {
				Path     string `json:"path"`
				Attempts int    `json:"attempts"`
			} `json:"entries"`
		}
		s.adminDo(http.MethodGet, "/subpool/v1/history?limit=500", nil, &page)
		for _, e := range page.Entries {
			if strings.Contains(e.Path, "/messages") || strings.Contains(e.Path, "/responses") || strings.Contains(e.Path, "/chat/completions") || geminiModelPath(strings.SplitN(e.Path, "?", 2)[0]) {
				n++
				a += e.Attempts
			}
		}
		return n, a
	}
	prevN, prevA := -1, -1
	for i := 0; i < 10; i++ {
		time.Sleep(300 * time.Millisecond)
		n, a := count()
		if n == prevN && a == prevA && (n > 0 || i >= 3) {
			break
		}
		prevN, prevA = n, a
	}
	return prevN, prevA
}
