package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/subpool/subpool/internal/freeport"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
)

// startOAuthSim runs a sim with its OAuth server; both token endpoints
// and all model routes answer on the OAuth server's address.
func startOAuthSim(t *testing.T, o sim.OAuthOptions) (*sim.Server, *sim.OAuthServer) {
	t.Helper()
	up := sim.New(sim.Options{})
	t.Cleanup(up.Close)
	oa := up.OAuth(o)
	if err := oa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oa.Close)
	return up, oa
}

// oauthHome is a home whose providers, token endpoints included, point at
// the sim.
func oauthHome(t *testing.T, oa *sim.OAuthServer) string {
	t.Helper()
	home := t.TempDir()
	cfg := fmt.Sprintf(`listen = %q
[keychain]
backend = "file"
[providers.anthropic]
base_url = %q
token_url = %q
# A free port for each login's callback: the real fixed ones would be
# shared with any other test binary running at the same time.
redirect_uri = "http://localhost:0/callback"
[providers.openai]
base_url = %q
chatgpt_base_url = %q
token_url = %q
redirect_uri = "http://localhost:0/auth/callback"
[wait]
sole_provider_max = "0s"
`, freeport.Addr(t), oa.URL(), oa.URL()+"/v1/oauth/token", oa.URL(), oa.URL()+"/backend-api/codex", oa.URL()+"/oauth/token")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// atSim sends an authorize URL for the real provider to the sim instead:
// the test client is the browser, and the sim is claude.ai.
func authorizeAtSim(oa *sim.OAuthServer, u string) string {
	_, q, _ := strings.Cut(u, "?")
	return oa.URL() + "/oauth/authorize?" + q
}

var noFollowClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}

// redirectOf is where the sim's authorize page sends the browser.
func authorizeRedirect(t *testing.T, u string) string {
	t.Helper()
	resp, err := noFollowClient.Get(u)
	if err != nil {
		t.Error(err)
		return ""
	}
	resp.Body.Close()
	return resp.Header.Get("Location")
}

// withBrowser replaces the browser for one test.
func withBrowser(t *testing.T, open func(u string) error) {
	t.Helper()
	old := openBrowser
	openBrowser = open
	t.Cleanup(func() { openBrowser = old })
}

// loginWith runs `subpool login` and plays the user: with the browser
// (following the redirect to subpool's callback, or pasting where it
// ended when the callback port is taken), or, with --no-browser, by
// reading the address from the output and pasting where it ended.
func loginWith(t *testing.T, oa *sim.OAuthServer, home, provider string, noBrowser bool) (code int, out, errs string) {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	paste := func(u string) {
		if loc := authorizeRedirect(t, authorizeAtSim(oa, u)); loc != "" {
			io.WriteString(stdinW, loc+"\n")
		}
	}
	withBrowser(t, func(u string) error {
		go func() {
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(authorizeAtSim(oa, u))
			if err != nil {
				t.Logf("callback unreachable (%v); pasting instead", err)
				paste(u)
				return
			}
			resp.Body.Close()
		}()
		return nil
	})
	args := []string{"login", provider, "--home", home}
	var stdout io.Writer
	var outBuf bytes.Buffer
	var wg sync.WaitGroup
	if noBrowser {
		args = append(args, "--no-browser")
		pr, pw := io.Pipe()
		stdout = pw
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				line := sc.Text()
				outBuf.WriteString(line + "\n")
				if u := strings.TrimSpace(line); strings.HasPrefix(u, "https://") {
					go paste(u)
				}
			}
		}()
		defer func() { pw.Close(); wg.Wait() }()
	} else {
		stdout = &outBuf
	}
	var errBuf bytes.Buffer
	code = cmdLogin(args[1:], stdinR, stdout, &errBuf)
	if pw, ok := stdout.(*io.PipeWriter); ok {
		pw.Close()
		wg.Wait()
	}
	return code, outBuf.String(), errBuf.String()
}

// oauthProxyFor is the server's own proxy: its authenticator carries the
// oauth branch (it was once a copy of the proxy built here with that branch
// wired in by hand).
func oauthProxyFor(t *testing.T, s *daemon.Daemon) string {
	t.Helper()
	return "http://" + s.Addr()
}

func sendVia(t *testing.T, base, key, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	// The requests play Claude Code, the tool a Claude subscription serves
	// by default.
	req.Header.Set("User-Agent", "claude-cli/2.1.197 (external, cli)")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func listStatusJSON(t *testing.T, home string) api.Status {
	t.Helper()
	code, out, errs := cli(t, "", "list", "--json", "--home", home)
	var st api.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("list --json: %d %q %q", code, out, errs)
	}
	return st
}

func statusCred(t *testing.T, st api.Status, id string) api.CredentialStatus {
	t.Helper()
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			if c.ID == id {
				return c
			}
		}
	}
	t.Fatalf("no credential %s in status", id)
	return api.CredentialStatus{}
}

func homeSecret(t *testing.T, home, id string) map[string]string {
	t.Helper()
	keys, _, err := keychain.Open("file", home)
	if err != nil {
		t.Fatal(err)
	}
	v, err := keys.Get(daemon.SecretKey(id))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	json.Unmarshal([]byte(v), &m)
	return m
}

// `subpool login`, end to end: the browser step is a test client; the
// tokens land in the keychain, the credential is listed under the
// account's name, and its first request carries what the upstream needs.
func TestLoginEndToEnd(t *testing.T) {
	up, oa := startOAuthSim(t, sim.OAuthOptions{Email: "ada@example.com", Plan: "pro", AccountID: "acct-ada"})
	home := oauthHome(t, oa)

	code, out, errs := loginWith(t, oa, home, "anthropic", false)
	if code != 0 || !strings.Contains(out, "added anthropic-") || !strings.Contains(out, "\nhttps://claude.com/cai/oauth/authorize?") {
		t.Fatalf("login anthropic: %d %q %q", code, out, errs)
	}
	claudeID := strings.Fields(out[strings.Index(out, "added "):])[1]
	code, out, errs = loginWith(t, oa, home, "chatgpt", true)
	if code != 0 || !strings.Contains(out, "added openai-") {
		t.Fatalf("login openai: %d %q %q", code, out, errs)
	}
	chatgptID := strings.Fields(out[strings.Index(out, "added "):])[1]
	if n := oa.Stats().Exchanges; n != 2 {
		t.Fatalf("%d code exchanges", n)
	}

	st := listStatusJSON(t, home)
	if c := statusCred(t, st, claudeID); c.Kind != api.KindOAuth || c.Label != "ada@example.com" || c.Provider != "anthropic" {
		t.Fatalf("claude credential: %+v", c)
	}
	if c := statusCred(t, st, chatgptID); c.Kind != api.KindOAuth || c.Label != "ada@example.com (pro)" {
		t.Fatalf("chatgpt credential: %+v", c)
	}
	claude, chatgpt := homeSecret(t, home, claudeID), homeSecret(t, home, chatgptID)
	if claude["access_token"] == "" || claude["refresh_token"] == "" || claude["expires_at"] == "" {
		t.Fatalf("claude secret keys: %v", secretKeys(claude))
	}
	if chatgpt["id_token"] == "" || chatgpt["account_id"] != "acct-ada" {
		t.Fatalf("chatgpt secret keys: %v", secretKeys(chatgpt))
	}

	s := startHome(t, home, &logBuf{})
	px := oauthProxyFor(t, s)
	up.SetUtilization(chatgpt["access_token"], 0.42, 0.1)
	resp, body := sendVia(t, px, s.ClientKey(), "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-beta", "claude-code-20250219")
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != claudeID {
		t.Fatalf("claude request: %d %s", resp.StatusCode, body)
	}
	resp, body = sendVia(t, px, s.ClientKey(), "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != chatgptID {
		t.Fatalf("chatgpt request: %d %s", resp.StatusCode, body)
	}
	recs := modelRequests(up.Requests())
	if len(recs) != 2 {
		t.Fatalf("%d upstream requests", len(recs))
	}
	c, g := recs[0], recs[1]
	if c.Header.Get("Authorization") != "Bearer "+claude["access_token"] || c.Header.Get("x-api-key") != "" ||
		c.Header.Get("anthropic-beta") != "claude-code-20250219,"+oauth.OAuthBeta {
		t.Fatalf("claude upstream headers: %v", c.Header)
	}
	if g.Path != "/backend-api/codex/responses" || g.Header.Get("chatgpt-account-id") != "acct-ada" || g.Header.Get("Authorization") != "Bearer "+chatgpt["access_token"] {
		t.Fatalf("chatgpt upstream: %s %v", g.Path, g.Header)
	}
	if u := statusCred(t, listStatusJSON(t, home), chatgptID).Usage; u == nil || u.FiveHour == nil || !closeTo(u.FiveHour.Used, 0.42) {
		t.Fatalf("utilization not in list --json: %+v", u)
	}

	var all strings.Builder
	all.WriteString(out + errs)
	_, listOut, _ := cli(t, "", "list", "--json", "--home", home)
	all.WriteString(listOut)
	for _, f := range []string{"config.toml", "state.json", "credentials.json"} {
		b, _ := os.ReadFile(filepath.Join(home, f))
		all.Write(b)
	}
	for _, sec := range []string{claude["access_token"], claude["refresh_token"], chatgpt["access_token"], chatgpt["refresh_token"], chatgpt["id_token"]} {
		if strings.Contains(all.String(), sec) {
			t.Fatal("a token leaked into output, status or the home's files")
		}
	}
}

func secretKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestLoginCommandErrors(t *testing.T) {
	_, oa := startOAuthSim(t, sim.OAuthOptions{})
	home := oauthHome(t, oa)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"login", "--home", home}, 2, "name one subscription"},
		{[]string{"login", "zai", "--home", home}, 2, "has no subscription login"},
		{[]string{"import", "--home", home}, 2, "name one CLI"},
		{[]string{"import", "cursor", "--home", home}, 2, "unknown CLI"},
	} {
		var out, errb bytes.Buffer
		cmd := cmdLogin
		if tc.args[0] == "import" {
			cmd = cmdImport
		}
		code := cmd(tc.args[1:], strings.NewReader(""), &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%v: %d %q", tc.args, code, errb.String())
		}
	}
	// Headless with no callback listener and nothing pasted: the login
	// ends with what to do instead of waiting forever.
	p := oauth.Anthropic(oa.URL() + "/v1/oauth/token")
	l, err := oauth.StartLogin(t.Context(), p, oauth.LoginOptions{NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := awaitLogin(t.Context(), l, strings.NewReader("\nnot-a-code\n"), &out, false); err == nil || !strings.Contains(err.Error(), "no address was pasted") {
		t.Fatalf("nothing pasted: %v", err)
	}
	if !strings.Contains(out.String(), "That did not work") {
		t.Fatalf("a bad paste was not reported: %q", out.String())
	}
}

// Importing: the CLI's login becomes a credential that refreshes through
// the proxy and hands its new tokens back to the CLI's file, which keeps
// its other fields and its mode.
func TestImportEndToEnd(t *testing.T) {
	up, oa := startOAuthSim(t, sim.OAuthOptions{Email: "cc@example.com"})
	home := oauthHome(t, oa)
	claudeDir, codexDir := t.TempDir(), t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", claudeDir)
	t.Setenv("CODEX_HOME", codexDir)

	code, _, errs := runImport("claude-code", "--home", home)
	if code != 1 || !strings.Contains(errs, "Claude Code has no login") || !strings.Contains(errs, "subpool login anthropic") {
		t.Fatalf("no login: %d %q", code, errs)
	}

	g := oa.Grant(sim.Anthropic)
	credPath := filepath.Join(claudeDir, ".credentials.json")
	orig := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":%q,"expiresAt":%d,"scopes":["user:inference"],"subscriptionType":"max"},"extra":{"x":1}}`,
		g.Access, g.Refresh, g.ExpiresAt.UnixMilli())
	os.WriteFile(credPath, []byte(orig), 0o600)
	os.WriteFile(filepath.Join(claudeDir, ".claude.json"), []byte(`{"oauthAccount":{"emailAddress":"cc@example.com"}}`), 0o600)
	var out, errb bytes.Buffer
	if code := cmdImport([]string{"claude-code", "--home", home}, nil, &out, &errb); code != 0 {
		t.Fatalf("import: %d %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "(anthropic, claude-code cc@example.com (max))") {
		t.Fatalf("import output: %q", out.String())
	}
	id := strings.Fields(out.String())[1]
	sec := homeSecret(t, home, id)
	if sec["source"] != "claude-code" || sec["source_path"] != credPath || sec["refresh_token"] != g.Refresh {
		t.Fatalf("secret keys: %v", secretKeys(sec))
	}

	cx := oa.Grant(sim.OpenAI)
	os.WriteFile(filepath.Join(codexDir, "auth.json"), []byte(fmt.Sprintf(`{"OPENAI_API_KEY":null,"tokens":{"id_token":%q,"access_token":%q,"refresh_token":%q,"account_id":%q},"last_refresh":"2026-01-01T00:00:00Z"}`,
		cx.IDToken, cx.Access, cx.Refresh, cx.AccountID)), 0o600)
	code, cout, errs := runImport("codex", "--home", home)
	if code != 0 || !strings.Contains(cout, "(openai, codex cc@example.com (plus))") {
		t.Fatalf("import codex: %d %q %q", code, cout, errs)
	}

	// The upstream stops taking the access token; the proxy refreshes it
	// and gives the new login back to Claude Code.
	logs := &logBuf{}
	s := startHome(t, home, logs)
	px := oauthProxyFor(t, s)
	oa.ExpireAccess(g.Access)
	resp, body := sendVia(t, px, s.ClientKey(), "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	b, _ := os.ReadFile(credPath)
	src := oauth.Source{Kind: oauth.SourceClaudeCode, Path: credPath}
	onDisk, err := src.Read()
	if err != nil || onDisk.Refresh == g.Refresh || onDisk.Refresh != homeSecret(t, home, id)["refresh_token"] {
		t.Fatalf("the CLI's file was not given the new login (%v; still the old one: %v; the home's: %v); the log:\n%s",
			err, onDisk.Refresh == g.Refresh, onDisk.Refresh == homeSecret(t, home, id)["refresh_token"], logs)
	}
	if fi, _ := os.Stat(credPath); fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), `"extra":{"x":1}`) || !strings.Contains(string(b), `"subscriptionType":"max"`) {
		t.Fatalf("file changed beyond the tokens: %s", b)
	}
	if st := oa.Stats(); st.Rotations != 1 || st.Reused != 0 {
		t.Fatalf("%+v", st)
	}
	// The last model request, not the last request: the server's poll of
	// each login's usage (the Codex one's too) can land after the retry.
	sent := modelRequests(up.Requests())
	if last := sent[len(sent)-1]; last.Credential != onDisk.Access {
		t.Fatal("the retry did not use the new token")
	}
}

// runImport runs `subpool import` (the command table entry is the lead's).
func runImport(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cmdImport(args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

// modelRequests leaves out the usage polls (the poller asks the usage
// endpoint of every login it has no windows for, at start).
func modelRequests(recs []sim.Record) []sim.Record {
	var out []sim.Record
	for _, r := range recs {
		if !strings.HasSuffix(r.Path, "/usage") {
			out = append(out, r)
		}
	}
	return out
}
