package oauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// Claude Code's file as it writes it, with fields subpool does not know;
// the mode is unusual on purpose, to see that it is kept.
func writeClaudeFile(t *testing.T, dir string, g sim.OAuthTokens) string {
	t.Helper()
	p := filepath.Join(dir, ".credentials.json")
	doc := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":%q,"expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"max","rateLimitTier":"default_claude_max_20x","futureField":{"a":[1,2,3]}},"mcpOAuth":{"server-x":{"token":"keep-me"}}}`,
		g.Access, g.Refresh, g.ExpiresAt.UnixMilli())
	if err := os.WriteFile(p, []byte(doc), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o640) // umask-proof
	return p
}

// Codex CLI's auth.json, pretty-printed as it writes it.
func writeCodexFile(t *testing.T, dir string, g sim.OAuthTokens) string {
	t.Helper()
	p := filepath.Join(dir, "auth.json")
	doc := fmt.Sprintf(`{
  "auth_mode": "chatgpt",
  "OPENAI_API_KEY": null,
  "tokens": {
    "id_token": %q,
    "access_token": %q,
    "refresh_token": %q,
    "account_id": %q
  },
  "last_refresh": "2026-02-27T09:12:31.123456Z",
  "agent_identity": {"kind": "unknown-to-subpool"}
}
`, g.IDToken, g.Access, g.Refresh, g.AccountID)
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// keysInOrder lists an object's keys as they appear in the file.
func keysInOrder(t *testing.T, raw []byte) []string {
	t.Helper()
	o, err := parseObject(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o.keys
}

func TestClaudeCodeSource(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", dir)
	os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(`{"oauthAccount":{"emailAddress":"cc@example.com"}}`), 0o600)
	g := e.oa.Grant(sim.Anthropic)
	path := writeClaudeFile(t, dir, g)
	before, _ := os.ReadFile(path)

	src, err := DetectClaudeCode()
	if err != nil || src != (Source{Kind: SourceClaudeCode, Path: path, Dir: dir}) {
		t.Fatalf("detect: %+v %v", src, err)
	}
	tok, err := src.Read()
	if err != nil || tok.Access != g.Access || tok.Refresh != g.Refresh || !tok.ExpiresAt.Equal(g.ExpiresAt) || tok.Plan != "max" || tok.Source != src {
		t.Fatalf("read: %+v %v", tok, err)
	}
	if ClaudeCodeEmail() != "cc@example.com" {
		t.Fatal("no email from .claude.json")
	}

	next := tok
	next.Access, next.Refresh, next.ExpiresAt = "sk-ant-oat01-new", "sk-ant-ort01-new", epoch.Add(3*time.Hour)
	if err := src.Write(next); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if got, _ := src.Read(); got.Access != next.Access || got.Refresh != next.Refresh || !got.ExpiresAt.Equal(next.ExpiresAt) {
		t.Fatalf("written: %+v", got)
	}
	// Everything else is byte for byte what Claude Code wrote, in order.
	want := strings.NewReplacer(g.Access, next.Access, g.Refresh, next.Refresh,
		fmt.Sprint(g.ExpiresAt.UnixMilli()), fmt.Sprint(next.ExpiresAt.UnixMilli())).Replace(string(before))
	if string(after) != want {
		t.Fatalf("file changed beyond the tokens:\n%s\n%s", before, after)
	}
	noTemp(t, dir)
}

func TestCodexSource(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{Email: "cx@example.com", Plan: "pro"})
	dir := t.TempDir()
	t.Setenv("CODEX_HOME", dir)
	g := e.oa.Grant(sim.OpenAI)
	path := writeCodexFile(t, dir, g)
	src, err := DetectCodex()
	if err != nil || src.Path != path {
		t.Fatalf("detect: %+v %v", src, err)
	}
	tok, err := src.Read()
	if err != nil || tok.Refresh != g.Refresh || tok.AccountID != g.AccountID || tok.Email != "cx@example.com" || tok.Plan != "pro" || !tok.ExpiresAt.Equal(g.ExpiresAt) {
		t.Fatalf("read: %+v %v", tok, err)
	}
	g2 := e.oa.Grant(sim.OpenAI)
	next := tok
	next.Access, next.Refresh, next.IDToken = g2.Access, g2.Refresh, g2.IDToken
	if err := src.Write(next); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(after, &doc); err != nil {
		t.Fatal(err)
	}
	if got := keysInOrder(t, after); strings.Join(got, ",") != "auth_mode,OPENAI_API_KEY,tokens,last_refresh,agent_identity" {
		t.Fatalf("key order: %v", got)
	}
	if string(doc["agent_identity"]) != `{"kind":"unknown-to-subpool"}` && !strings.Contains(string(after), `"kind": "unknown-to-subpool"`) {
		t.Fatalf("unknown key lost: %s", after)
	}
	if string(doc["OPENAI_API_KEY"]) != "null" || string(doc["auth_mode"]) != `"chatgpt"` || string(doc["last_refresh"]) == `"2026-02-27T09:12:31.123456Z"` {
		t.Fatalf("fields: %s", after)
	}
	if !bytes.HasPrefix(after, []byte("{\n  \"auth_mode\"")) || !bytes.HasSuffix(after, []byte("}\n")) {
		t.Fatalf("formatting lost:\n%s", after)
	}
	if got, _ := src.Read(); got.Refresh != g2.Refresh || got.IDToken != g2.IDToken {
		t.Fatal("tokens not written")
	}
	noTemp(t, dir)
}

func noTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".subpool-") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
}

func TestImportWithoutLoginSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", dir)
	t.Setenv("CODEX_HOME", dir)
	if _, err := DetectClaudeCode(); !errors.Is(err, ErrNoLogin) || !strings.Contains(err.Error(), "subpool login anthropic") {
		t.Fatalf("claude: %v", err)
	}
	if _, err := DetectCodex(); !errors.Is(err, ErrNoLogin) || !strings.Contains(err.Error(), "codex login") {
		t.Fatalf("codex: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "auth.json"), []byte(`{"OPENAI_API_KEY":"sk-proj-secret-123","tokens":null}`), 0o600)
	src, _ := DetectCodex()
	_, err := src.Read()
	if !errors.Is(err, ErrNoLogin) || !strings.Contains(err.Error(), "add-key") {
		t.Fatalf("api-key login: %v", err)
	}
	noSecret(t, "error", err.Error(), "sk-proj-secret-123")
	os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte(`{"otherTool":{}}`), 0o600)
	src, _ = DetectClaudeCode()
	if _, err := src.Read(); !errors.Is(err, ErrNoLogin) {
		t.Fatalf("no claudeAiOauth: %v", err)
	}
}

// cli plays Claude Code or Codex: when it needs a token it reads its
// file, refreshes with the refresh token there, and writes the answer
// back (whole, re-marshalled, as the CLIs do).
type cli struct {
	t        *testing.T
	clk      interface{ Now() time.Time }
	p        Provider
	path     string
	tokenKey string // "claudeAiOauth" or "tokens"
	refKey   string // "refreshToken" or "refresh_token"
	accKey   string
}

func (c *cli) refresh() {
	c.t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil {
		c.t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		c.t.Fatal(err)
	}
	inner := doc[c.tokenKey].(map[string]any)
	fields := map[string]string{"grant_type": "refresh_token", "refresh_token": inner[c.refKey].(string), "client_id": c.p.ClientID}
	var req *http.Request
	if c.p.Name == NameAnthropic {
		jb, _ := json.Marshal(fields)
		req, _ = http.NewRequest(http.MethodPost, c.p.TokenURL, bytes.NewReader(jb))
		req.Header.Set("Content-Type", "application/json")
	} else {
		v := url.Values{}
		for k, f := range fields {
			v.Set(k, f)
		}
		req, _ = http.NewRequest(http.MethodPost, c.p.TokenURL, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		c.t.Fatalf("the CLI's own refresh failed: %d %s", resp.StatusCode, body)
	}
	var a map[string]any
	json.Unmarshal(body, &a)
	inner[c.refKey] = a["refresh_token"]
	inner[c.accKey] = a["access_token"]
	if c.p.Name == NameAnthropic {
		inner["expiresAt"] = c.clk.Now().Add(time.Hour).UnixMilli()
	} else {
		inner["id_token"] = a["id_token"]
	}
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(c.path, out, 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// The CLI and subpool refresh one imported login in turn, 20 times: each
// takes up what the other left in the file, nobody is ever refused, and
// the file keeps its other fields and its mode.
func TestCLIAndSubpoolShareOneLogin(t *testing.T) {
	for _, provider := range []string{sim.Anthropic, sim.OpenAI} {
		t.Run(provider, func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			dir := t.TempDir()
			g := e.oa.Grant(provider)
			p, c := e.anth, &cli{t: t, clk: e.clk, p: e.anth, tokenKey: "claudeAiOauth", refKey: "refreshToken", accKey: "accessToken"}
			c.path = writeClaudeFile(t, dir, g)
			if provider == sim.OpenAI {
				p, c = e.oai, &cli{t: t, clk: e.clk, p: e.oai, tokenKey: "tokens", refKey: "refresh_token", accKey: "access_token"}
				c.path = writeCodexFile(t, dir, g)
			}
			src := Source{Kind: SourceClaudeCode, Path: c.path}
			if provider == sim.OpenAI {
				src.Kind = SourceCodex
			}
			tok, err := src.Read()
			if err != nil {
				t.Fatal(err)
			}
			e.store.toks["imp"] = tok
			ctx := guard(t)
			var last string
			for round := range 20 {
				e.clk.Advance(61 * time.Minute) // whoever goes next finds the token expired
				if round%2 == 0 {
					c.refresh()
					continue
				}
				got, err := e.m.Token(ctx, "imp", p, false)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if got.Access == last {
					t.Fatalf("round %d: no new token", round)
				}
				last = got.Access
				onDisk, _ := src.Read()
				if onDisk.Refresh != got.Refresh || e.store.get("imp").Refresh != got.Refresh {
					t.Fatalf("round %d: file, keychain and memory disagree", round)
				}
			}
			st := e.oa.Stats()
			if st.Reused != 0 || st.Rotations != 20 || st.Refreshes != 20 {
				t.Fatalf("stats %+v", st)
			}
			// Each subpool round took the CLI's login up first.
			if n := len(e.rec.of("token_refreshed")); n != 20 {
				t.Fatalf("%d token_refreshed events, want 10 adoptions + 10 refreshes", n)
			}
			b, _ := os.ReadFile(c.path)
			if provider == sim.Anthropic && (!strings.Contains(string(b), `"keep-me"`) || !strings.Contains(string(b), `"rateLimitTier"`)) {
				t.Fatalf("Claude Code's other fields lost: %s", b)
			}
			if provider == sim.OpenAI && !strings.Contains(string(b), `unknown-to-subpool`) {
				t.Fatalf("Codex's other fields lost: %s", b)
			}
			noSecret(t, "logs", e.logs.String(), last)
		})
	}
}

// The race the re-read cannot close: the CLI spends the refresh token
// between subpool's re-read and its refresh. subpool's refresh is refused,
// and it takes up the CLI's new login instead of asking for a re-login.
func TestRefusedRefreshTakesUpTheCLIsLogin(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir := t.TempDir()
	g := e.oa.Grant(sim.Anthropic)
	c := &cli{t: t, clk: e.clk, p: e.anth, path: writeClaudeFile(t, dir, g), tokenKey: "claudeAiOauth", refKey: "refreshToken", accKey: "accessToken"}
	src := Source{Kind: SourceClaudeCode, Path: c.path}
	tok, _ := src.Read()
	e.store.toks["imp"] = tok
	var once sync.Once
	e.m.o.Client = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		once.Do(c.refresh)
		return http.DefaultTransport.RoundTrip(r)
	})}
	e.clk.Advance(2 * time.Hour)
	got, err := e.m.Token(guard(t), "imp", e.anth, false)
	if err != nil {
		t.Fatalf("lost the race and the login: %v", err)
	}
	if onDisk, _ := src.Read(); got.Refresh != onDisk.Refresh {
		t.Fatal("did not take up the CLI's login")
	}
	if st := e.oa.Stats(); st.Reused != 1 || st.Rotations != 1 {
		t.Fatalf("%+v", st)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A source still holding a refresh token subpool has spent (its
// write-back was lost) is not taken up: that would trade a good login for
// a dead one.
func TestStaleSourceIsNotAdopted(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir := t.TempDir()
	g := e.oa.Grant(sim.Anthropic)
	path := writeClaudeFile(t, dir, g)
	src := Source{Kind: SourceClaudeCode, Path: path}
	stale, _ := os.ReadFile(path)
	tok, _ := src.Read()
	e.store.toks["imp"] = tok
	ctx := guard(t)
	e.clk.Advance(2 * time.Hour)
	if _, err := e.m.Token(ctx, "imp", e.anth, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, stale, 0o640) // as if the write-back never happened
	e.clk.Advance(2 * time.Hour)
	if _, err := e.m.Token(ctx, "imp", e.anth, false); err != nil {
		t.Fatalf("took up the spent token: %v", err)
	}
	if st := e.oa.Stats(); st.Reused != 0 || st.Rotations != 2 {
		t.Fatalf("%+v", st)
	}
}

// Logging in again in the CLI between subpool's refresh and its
// write-back gives the file a login subpool knows nothing of: it is left
// alone.
func TestWriteBackLeavesANewerLoginAlone(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir := t.TempDir()
	g := e.oa.Grant(sim.Anthropic)
	path := writeClaudeFile(t, dir, g)
	src := Source{Kind: SourceClaudeCode, Path: path}
	relogin := e.oa.Grant(sim.Anthropic)
	writeClaudeFile(t, dir, relogin)
	mine := Tokens{Access: "sk-ant-oat01-mine", Refresh: "sk-ant-ort01-mine", ExpiresAt: epoch}
	if err := src.write(mine, g.Refresh); !errors.Is(err, errSourceMoved) {
		t.Fatalf("overwrote a newer login: %v", err)
	}
	if got, _ := src.Read(); got.Refresh != relogin.Refresh {
		t.Fatal("file changed")
	}
}

// The keychain keeps expiry in seconds and Claude Code in milliseconds:
// the same login read from both is not "newer" in the file, and a forced
// refresh refreshes instead of taking the file's copy of the refused token.
func TestSameLoginInTheSourceIsNotAdopted(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	e.clk.Advance(1234 * time.Millisecond)
	g := e.oa.Grant(sim.Anthropic)
	path := writeClaudeFile(t, t.TempDir(), g)
	src := Source{Kind: SourceClaudeCode, Path: path}
	tok, _ := src.Read()
	tok.ExpiresAt = tok.ExpiresAt.Truncate(time.Second)
	e.store.toks["imp"] = tok
	got, err := e.m.Token(guard(t), "imp", e.anth, true)
	if err != nil || got.Access == g.Access {
		t.Fatalf("forced refresh handed back the refused token: %v", err)
	}
	if st := e.oa.Stats(); st.Rotations != 1 {
		t.Fatalf("%+v", st)
	}
}

// CLAUDE_SECURESTORAGE_CONFIG_DIR moves Claude Code's credentials (and its
// locks) away from its config dir; set but empty, it means ~/.claude.
func TestSecureStorageDirIsHonoured(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	cfgDir, storeDir, home := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", cfgDir)
	t.Setenv("CLAUDE_SECURESTORAGE_CONFIG_DIR", storeDir)
	path := writeClaudeFile(t, storeDir, e.oa.Grant(sim.Anthropic))
	src, err := DetectClaudeCode()
	if err != nil || src != (Source{Kind: SourceClaudeCode, Path: path, Dir: storeDir}) {
		t.Fatalf("detect: %+v %v", src, err)
	}
	if _, hashOf, _ := claudeStorage(); hashOf != storeDir {
		t.Fatalf("keychain hash of %q, want the secure-storage dir", hashOf)
	}
	t.Setenv("CLAUDE_SECURESTORAGE_CONFIG_DIR", "")
	dot := filepath.Join(home, ".claude")
	os.Mkdir(dot, 0o700)
	path = writeClaudeFile(t, dot, e.oa.Grant(sim.Anthropic))
	src, err = DetectClaudeCode()
	if err != nil || src.Path != path || src.Dir != dot {
		t.Fatalf("empty: %+v %v", src, err)
	}
	if _, hashOf, _ := claudeStorage(); hashOf != "" {
		t.Fatalf("empty: keychain hash of %q, want none", hashOf)
	}
}

// Claude Code normalises its config dir to NFC before it uses it and
// hashes it for the keychain item's name: a CLAUDE_CONFIG_DIR given
// decomposed (NFD, "e" + U+0301) finds the login in the NFC directory
// and names the NFC path's keychain item.
func TestClaudeConfigDirIsNFC(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	base := t.TempDir()
	nfc, nfd := filepath.Join(base, "caf\u00e9"), filepath.Join(base, "cafe\u0301")
	if err := os.Mkdir(nfc, 0o700); err != nil {
		t.Fatal(err)
	}
	path := writeClaudeFile(t, nfc, e.oa.Grant(sim.Anthropic))
	t.Setenv("CLAUDE_CONFIG_DIR", nfd)
	src, err := DetectClaudeCode()
	if err != nil || src.Path != path || src.Dir != nfc {
		t.Fatalf("detect with an NFD dir: %+v %v", src, err)
	}
	_, hashOf, _ := claudeStorage()
	sum := sha256.Sum256([]byte(nfc))
	if got, want := claudeKeychainService(hashOf), "Claude Code-credentials-"+hex.EncodeToString(sum[:])[:8]; got != want {
		t.Fatalf("keychain item %q, want %q (the NFC path's)", got, want)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CLAUDE_SECURESTORAGE_CONFIG_DIR", nfd)
	if dir, hashOf, _ := claudeStorage(); dir != nfc || hashOf != nfc {
		t.Fatalf("secure-storage dir %q hashed as %q, want both %q", dir, hashOf, nfc)
	}
}

// A running Claude Code re-reads .credentials.json when the file's
// fingerprint (inode, size, mtime, ctime) changes, and Codex re-reads
// auth.json while it runs: subpool's write-back replaces the file (a new
// inode, by rename), so a watcher sees the change whatever the clock's
// grain, and never a file half written.
func TestWriteBackIsANewFile(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir := t.TempDir()
	for _, src := range []Source{
		{Kind: SourceClaudeCode, Path: writeClaudeFile(t, dir, e.oa.Grant(sim.Anthropic)), Dir: dir},
		{Kind: SourceCodex, Path: writeCodexFile(t, dir, e.oa.Grant(sim.OpenAI))},
	} {
		before, err := os.Stat(src.Path)
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := src.Read()
		tok.Access = tok.Access + "-renewed"
		if err := src.Write(tok); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(src.Path)
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(before, after) {
			t.Fatalf("%s: written in place; a CLI reading it meanwhile could see half of it", src.Kind)
		}
		if got, _ := src.Read(); got.Access != tok.Access {
			t.Fatalf("%s: not written", src.Kind)
		}
	}
}
