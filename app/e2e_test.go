package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/subpool/subpool/internal/freeport"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// Fake secrets: long enough to be found if they leak anywhere.
const (
	keyA = "sk-test-alpha-0123456789abcdef0123456789"
	keyB = "sk-test-bravo-0123456789abcdef0123456789"
)

// newHome makes a home whose providers point at up, with the file
// keychain backend (the OS keychain has its own tests in keychain/).
func newHome(t *testing.T, up *sim.Server, extra string) (home, addr string) {
	t.Helper()
	home = t.TempDir()
	addr = freeport.Addr(t)
	cfg := fmt.Sprintf(`listen = %q
[keychain]
backend = "file"
[providers.anthropic]
base_url = %q
[providers.openai]
base_url = %q
[wait]
sole_provider_max = "0s"
%s`, addr, up.URL(), up.URL(), extra)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, addr
}

func startSim(t *testing.T, o sim.Options) *sim.Server {
	t.Helper()
	up := sim.New(o)
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Close)
	return up
}

// cli runs one subpool command line and returns exit code and output.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// logBuf collects log lines from a server.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(format string, a ...any) {
	l.mu.Lock()
	fmt.Fprintf(&l.b, format+"\n", a...)
	l.mu.Unlock()
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startHome(t *testing.T, home string, logs *logBuf) *daemon.Daemon {
	t.Helper()
	return startWith(t, daemon.Options{Home: home, Logf: logs.logf})
}

// startWith starts a server that stops when the test ends.
func startWith(t *testing.T, o daemon.Options) *daemon.Daemon {
	t.Helper()
	s, err := daemon.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// daemonStatus is s's status (a daemon's never fails).
func daemonStatus(s *daemon.Daemon) api.Status {
	st, _ := s.Status(context.Background())
	return st
}

func proxyPost(t *testing.T, s *daemon.Daemon, path, body string) (*http.Response, string) {
	t.Helper()
	return postWith(t, s.Addr(), s.ClientKey(), path, body)
}

// postWith posts body to the proxy on addr with the client key key.
func postWith(t *testing.T, addr, key, path, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	// A fresh connection each time: tests restart servers on the same
	// address, and a kept-alive connection to the stopped one would answer
	// a POST with EOF.
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// A new user's path: keys added with no proxy running, `serve` started,
// requests alternate between the keys, `list` talks to the running proxy,
// and no secret shows up in logs, status, list output or responses.
func TestServeEndToEnd(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	for _, k := range []struct{ key, label string }{{keyA, "alpha"}, {keyB, "bravo"}} {
		code, out, errs := cli(t, k.key+"\n", "add-key", "anthropic", "--label", k.label, "--home", home)
		if code != 0 || !strings.HasPrefix(out, "added anthropic-") {
			t.Fatalf("add-key: %d %q %q", code, out, errs)
		}
	}
	if fi, err := os.Stat(filepath.Join(home, "secrets.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file keychain: %v %v", fi, err)
	}

	logs := &logBuf{}
	s := startHome(t, home, logs)
	if fi, err := os.Stat(filepath.Join(home, "admin-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin-token: %v", err)
	}
	var everything strings.Builder
	for i := 0; i < 10; i++ {
		resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		fmt.Fprintln(&everything, resp.Header, body)
	}
	var seen []string
	for _, r := range up.Requests() {
		seen = append(seen, r.Credential)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			t.Fatalf("upstream calls did not alternate: %v", seen)
		}
	}

	code, out, errs := cli(t, "", "list", "--home", home)
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "bravo") || !strings.Contains(out, "ready") {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
	everything.WriteString(out)
	code, out, _ = cli(t, "", "list", "--json", "--home", home)
	var st api.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Providers[0].Credentials) != 2 || st.Providers[0].Credentials[0].Counters.Requests != 5 {
		t.Fatalf("list --json: %d %s", code, out)
	}
	everything.WriteString(out)
	everything.WriteString(logs.String())
	state, _ := os.ReadFile(filepath.Join(home, "state.json"))
	creds, _ := os.ReadFile(filepath.Join(home, "credentials.json"))
	cfg, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	everything.Write(state)
	everything.Write(creds)
	everything.Write(cfg)
	for _, secret := range []string{keyA, keyB, s.ClientKey(), s.AdminToken()} {
		if strings.Contains(everything.String(), secret) {
			t.Fatalf("a secret leaked:\n%s", everything.String())
		}
	}
}

// The verbs work on the home directly when no proxy runs.
func TestVerbsWithoutProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	code, out, _ := cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	if code != 0 {
		t.Fatal(out)
	}
	id := strings.Fields(out)[1]
	for _, verb := range []string{"pause", "resume", "reset"} {
		if code, out, errs := cli(t, "", verb, id, "--home", home); code != 0 {
			t.Fatalf("%s: %q %q", verb, out, errs)
		}
	}
	cli(t, "", "pause", id, "--home", home)
	_, out, _ = cli(t, "", "list", "--home", home)
	if !strings.Contains(out, "paused") {
		t.Fatalf("pause did not persist: %s", out)
	}
	if code, _, errs := cli(t, "", "remove", "nope", "--home", home); code != 1 || !strings.Contains(errs, "subpool list") {
		t.Fatalf("remove unknown: %d %q", code, errs)
	}
	if code, _, _ := cli(t, "", "remove", id, "--home", home); code != 0 {
		t.Fatal("remove failed")
	}
	_, out, _ = cli(t, "", "list", "--home", home)
	if !strings.Contains(out, "no credentials yet") {
		t.Fatalf("after remove: %s", out)
	}
	b, _ := os.ReadFile(filepath.Join(home, "secrets.json"))
	if strings.Contains(string(b), keyA) {
		t.Fatal("remove left the secret in the keychain")
	}
}

// Bad input: one line saying what to do, non-zero exit, no stack trace.
func TestCommandErrorsAreOneLine(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "config.toml"), []byte("[cooldown]\nladder = [\"30s\", \"soon\"]\n"), 0o600)
	for _, tc := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"", []string{"frobnicate"}, 2, "unknown command"},
		{"", []string{"add-key", "anthropic", "--home", home}, 2, "--label is required"},
		{"", []string{"add-key", "anthropic", "--label", "x", "--home", home}, 2, "no key on stdin"},
		{"k", []string{"add-key", "nosuch", "--label", "x", "--home", home}, 2, "unknown provider"},
		{"", []string{"list", "--bogus", "--home", home}, 2, "flag provided but not defined"},
		{"", []string{"env", "vim", "--home", home}, 2, "unknown tool"},
		{"", []string{"serve", "--home", bad}, 1, "cooldown.ladder[1]"},
		{"", []string{"serve", "--home", home, "--listen", "0.0.0.0:1"}, 1, "not a loopback address"},
		{"", []string{"events", "--home", home}, 1, "no proxy answers"},
	} {
		code, out, errs := cli(t, tc.stdin, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "goroutine") {
			t.Errorf("%v: code %d out %q err %q", tc.args, code, out, errs)
		}
	}
	for _, cmd := range []string{"serve", "demo", "add-key", "login", "import", "list", "remove", "pause", "resume", "reset", "env", "events", "classify", "service", "tray"} {
		code, out, _ := cli(t, "", cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage") && !strings.Contains(out, "usage") {
			t.Errorf("%s --help: %d %q", cmd, code, out)
		}
	}
}

// env prints a working setup: the shell lines point a client at the proxy
// and carry the key it accepts.
func TestEnvWorks(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, addr := newHome(t, up, "")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	s := startHome(t, home, &logBuf{})
	// Each tool gets a key of its own (issue 18), made on first use and
	// the same ever after; none is the default key.
	seen := map[string]string{}
	for _, tool := range []string{"claude-code", "codex", "opencode", "shell", "codex"} {
		code, out, errs := cli(t, "", "env", tool, "--home", home)
		key := regexp.MustCompile(`sp-[0-9a-f]+`).FindString(out)
		if code != 0 || key == "" || key == s.ClientKey() || !strings.Contains(out, addr) {
			t.Fatalf("env %s: %d %q %q", tool, code, out, errs)
		}
		if prev, ok := seen[tool]; ok && prev != key {
			t.Fatalf("env %s printed another key the second time", tool)
		}
		for other, k := range seen {
			if other != tool && k == key {
				t.Fatalf("%s and %s share a key", tool, other)
			}
		}
		seen[tool] = key
	}
	_, out, _ := cli(t, "", "env", "shell", "--home", home)
	vars := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok {
			vars[k] = v
		}
	}
	req, _ := http.NewRequest(http.MethodPost, vars["ANTHROPIC_BASE_URL"]+"/v1/messages", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+vars["ANTHROPIC_AUTH_TOKEN"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the printed setup does not work: %v %v", resp, err)
	}
	resp.Body.Close()
}

// Cooldowns survive a restart; a damaged state file is set aside and the
// proxy starts anyway, credentials intact.
func TestRestartKeepsCooldownsAndSurvivesDamage(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	s := startHome(t, home, &logBuf{})
	up.Script(keyA, sim.RateLimited("anthropic", time.Hour))
	resp, _ := proxyPost(t, s, "/v1/messages", `{"model":"m","messages":[]}`)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	s2 := startHome(t, home, &logBuf{})
	st := daemonStatus(s2)
	c := st.Providers[0].Credentials[0]
	if c.State != api.StateCooling || len(c.Cooldowns) != 1 || time.Until(c.Cooldowns[0].Until) < 59*time.Minute {
		t.Fatalf("cooldown lost over restart: %+v", c)
	}
	s2.Shutdown(ctx)

	statePath := filepath.Join(home, "state.json")
	b, _ := os.ReadFile(statePath)
	os.WriteFile(statePath, b[:len(b)/2], 0o600)
	logs := &logBuf{}
	s3 := startHome(t, home, logs)
	if !strings.Contains(logs.String(), "moved it to") {
		t.Fatalf("no warning about the damaged state: %q", logs.String())
	}
	matches, _ := filepath.Glob(statePath + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("damaged file not set aside: %v", matches)
	}
	if st := daemonStatus(s3); len(st.Providers[0].Credentials) != 1 {
		t.Fatal("credentials lost with the state file")
	}
	resp, _ = proxyPost(t, s3, "/v1/messages", `{"model":"m","messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("after damage: %d", resp.StatusCode)
	}
}

// A second serve on a taken address ends at once with one line naming the
// address and who holds it.
func TestSecondServeNamesTheHolder(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, addr := newHome(t, up, "")
	startHome(t, home, &logBuf{})
	other := t.TempDir()
	code, _, errs := cli(t, "", "serve", "--home", other, "--listen", addr)
	if code != 1 || !strings.Contains(errs, addr) || !strings.Contains(errs, "running subpool") {
		t.Fatalf("%d %q", code, errs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errs = cli(t, "", "serve", "--home", other, "--listen", ln.Addr().String())
	if code != 1 || !strings.Contains(errs, "another program") {
		t.Fatalf("%d %q", code, errs)
	}
}

// SIGTERM during a streaming request: the stream completes, the state file
// is written, and serve exits 0.
func TestSIGTERMLetsStreamsFinish(t *testing.T) {
	up := startSim(t, sim.Options{Chunks: 20, ChunkInterval: 25 * time.Millisecond})
	home, addr := newHome(t, up, "")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	os.Remove(filepath.Join(home, "state.json"))
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() { done <- cmdServe([]string{"--home", home}, nil, io.Discard, &errb) }()
	key := ""
	deadline := time.Now().Add(10 * time.Second)
	for key == "" && time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			_, out, _ := cli(t, "", "env", "shell", "--home", home)
			for _, l := range strings.Split(out, "\n") {
				if v, ok := strings.CutPrefix(l, "export ANTHROPIC_AUTH_TOKEN="); ok {
					key = v
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	self, _ := os.FindProcess(os.Getpid())
	self.Signal(syscall.SIGTERM) // not syscall.Kill: the Windows cross-vet must compile it
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(rest), "message_stop") {
		t.Fatalf("stream cut: %v\n%s", err, rest)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	if _, err := os.Stat(filepath.Join(home, "state.json")); err != nil {
		t.Fatal("state file not written on stop")
	}
}

// serve --listen moves the proxy off the configured address; the verbs
// and env follow it there.
func TestVerbsFindServeOnAnotherAddress(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, cfgAddr := newHome(t, up, "")
	other := freeport.Addr(t)
	s, err := daemon.Start(daemon.Options{Home: home, Listen: other, Logf: (&logBuf{}).logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if code, out, errs := cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home); code != 0 {
		t.Fatalf("add-key did not find the proxy on %s (config says %s): %q %q", other, cfgAddr, out, errs)
	}
	if st := daemonStatus(s); len(st.Providers[0].Credentials) != 1 {
		t.Fatal("the key did not reach the running proxy")
	}
	_, out, _ := cli(t, "", "env", "shell", "--home", home)
	if !strings.Contains(out, "http://"+other) {
		t.Fatalf("env points elsewhere: %s", out)
	}
}
