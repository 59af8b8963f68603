package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// writeGeminiFile writes oauth_creds.json as Gemini CLI writes it: the
// Credentials object of google-auth-library, keys in the order of
// Google's answer with expiry_date last, JSON.stringify(…, null, 2) with
// no newline at the end. The mode is not the CLI's on purpose, to see a
// write-back give it 0600.
func writeGeminiFile(t *testing.T, dir string, tok Tokens) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "oauth_creds.json")
	doc := fmt.Sprintf(`{
  "access_token": %q,
  "refresh_token": %q,
  "scope": "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.profile openid https://www.googleapis.com/auth/userinfo.email",
  "token_type": "Bearer",
  "id_token": %q,
  "expiry_date": %d
}`, tok.Access, tok.Refresh, tok.IDToken, tok.ExpiresAt.UnixMilli())
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o644) // umask-proof
	return p
}

func TestGeminiCLISource(t *testing.T) {
	g := newFakeGoogle(t)
	home := t.TempDir()
	t.Setenv("GEMINI_CLI_HOME", home)
	dir := filepath.Join(home, ".gemini")
	login := g.grant(epoch)
	path := writeGeminiFile(t, dir, login)
	os.WriteFile(filepath.Join(dir, "google_accounts.json"), []byte("{\n  \"active\": \"ada.lovelace@gmail.com\",\n  \"old\": []\n}"), 0o644)
	before, _ := os.ReadFile(path)

	src, err := DetectGeminiCLI()
	if err != nil || src != (Source{Kind: SourceGeminiCLI, Path: path}) {
		t.Fatalf("detect: %+v %v", src, err)
	}
	tok, err := src.Read()
	if err != nil || tok.Access != login.Access || tok.Refresh != login.Refresh || tok.IDToken != login.IDToken ||
		!tok.ExpiresAt.Equal(login.ExpiresAt) || tok.Email != "ada.lovelace@gmail.com" || tok.Source != src {
		t.Fatalf("read: %+v %v", tok, err)
	}
	if GeminiCLIEmail() != "ada.lovelace@gmail.com" {
		t.Fatal("no email from google_accounts.json")
	}

	next := tok
	next.Access, next.ExpiresAt = "ya29.a0AfB_subpools", epoch.Add(2*time.Hour)
	if err := src.Write(next); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want Gemini CLI's 0600", fi.Mode())
	}
	// Everything but the two values is what the CLI wrote, byte for byte.
	want := strings.NewReplacer(login.Access, next.Access, fmt.Sprint(login.ExpiresAt.UnixMilli()), fmt.Sprint(next.ExpiresAt.UnixMilli())).Replace(string(before))
	if string(after) != want {
		t.Fatalf("file changed beyond the tokens:\n%s\n%s", before, after)
	}
	if got, _ := src.Read(); got.Access != next.Access || !got.ExpiresAt.Equal(next.ExpiresAt) {
		t.Fatalf("written: %+v", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files in %s: a temporary file was left", len(ents), dir)
	}

	// Without GEMINI_CLI_HOME it is ~/.gemini.
	t.Setenv("GEMINI_CLI_HOME", "")
	t.Setenv("HOME", home)
	if src2, err := DetectGeminiCLI(); err != nil || src2.Path != path {
		t.Fatalf("home: %+v %v", src2, err)
	}
}

func TestGeminiCLIWithoutLoginSaysWhatToDo(t *testing.T) {
	home := t.TempDir()
	t.Setenv("GEMINI_CLI_HOME", home)
	dir := filepath.Join(home, ".gemini")
	if _, err := DetectGeminiCLI(); !errors.Is(err, ErrNoLogin) || !strings.Contains(err.Error(), "Login with Google") || !strings.Contains(err.Error(), "subpool login google") {
		t.Fatalf("none: %v", err)
	}
	// The CLI told to keep it encrypted: it deletes oauth_creds.json and
	// keeps gemini-credentials.json (or the keychain).
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "gemini-credentials.json"), []byte("9f2c:aa01:ffee"), 0o600)
	if _, err := DetectGeminiCLI(); !errors.Is(err, ErrNoLogin) || !strings.Contains(err.Error(), "GEMINI_FORCE_ENCRYPTED_FILE_STORAGE") {
		t.Fatalf("encrypted: %v", err)
	}
	p := filepath.Join(dir, "oauth_creds.json")
	os.WriteFile(p, []byte(`{"type":"service_account","project_id":"p","private_key":"-----BEGIN PRIVATE KEY-----secret"}`), 0o600)
	src, err := DetectGeminiCLI()
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Read()
	if !errors.Is(err, ErrNoLogin) || !strings.Contains(err.Error(), "Application Default Credentials (service_account)") {
		t.Fatalf("adc: %v", err)
	}
	noSecret(t, "the error", err.Error(), "-----BEGIN PRIVATE KEY-----secret")
	os.WriteFile(p, []byte(`{}`), 0o600)
	if _, err := src.Read(); !errors.Is(err, ErrNoLogin) {
		t.Fatalf("empty: %v", err)
	}
	os.WriteFile(p, []byte(`{"access_token":`), 0o600)
	if _, err := src.Read(); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("broken: %v", err)
	}
}

// geminiCLI plays Gemini CLI: its google-auth-library refreshes with the
// refresh token of its file, and the "tokens" handler writes the answer
// whole (refresh token kept, expiry_date added) with mode 0600.
type geminiCLI struct {
	t    *testing.T
	clk  interface{ Now() time.Time }
	g    *fakeGoogle
	path string
}

func (c *geminiCLI) file() map[string]any {
	c.t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil {
		c.t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		c.t.Fatal(err)
	}
	return doc
}

func (c *geminiCLI) refresh() {
	c.t.Helper()
	doc := c.file()
	form := url.Values{"refresh_token": {doc["refresh_token"].(string)}, "client_id": {GoogleClientID}, "client_secret": {GoogleClientSecret}, "grant_type": {"refresh_token"}}
	resp, err := http.Post(c.g.srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
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
	a["expiry_date"] = c.clk.Now().UnixMilli() + int64(a["expires_in"].(float64))*1000
	delete(a, "expires_in")
	a["refresh_token"] = doc["refresh_token"]
	out, _ := json.MarshalIndent(a, "", "  ")
	if err := os.WriteFile(c.path, out, 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// works reports whether the CLI's file holds an access token Google takes.
func (c *geminiCLI) works() bool {
	return c.g.valid(c.file()["access_token"].(string))
}

// Gemini CLI and subpool share one imported login: when the CLI has
// refreshed, subpool takes its token up instead of refreshing; when
// subpool refreshes, the CLI finds the new token in its file, in its
// shape and mode. Neither is ever refused.
func TestGeminiCLIAndSubpoolShareOneLogin(t *testing.T) {
	g := newFakeGoogle(t)
	clk := clock.NewFake(epoch)
	store, rec := newMemStore(), &recorder{}
	m := NewManager(ManagerOptions{Clock: clk, Store: store, Emit: rec})
	p := g.provider()
	c := &geminiCLI{t: t, clk: clk, g: g, path: writeGeminiFile(t, t.TempDir(), g.grant(clk.Now()))}
	src := Source{Kind: SourceGeminiCLI, Path: c.path}
	tok, err := src.Read()
	if err != nil {
		t.Fatal(err)
	}
	tok.Project = "wise-vortex-4k2q9"
	store.toks["imp"] = tok
	ctx := guard(t)
	for round := range 5 {
		clk.Advance(61 * time.Minute)
		c.refresh()
		clk.Advance(10 * time.Minute)
		got, err := m.Token(ctx, "imp", p, false)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, _, n := g.stats(); got.Access != c.file()["access_token"] || n != 2*round+1 || got.Project != tok.Project {
			t.Fatalf("round %d: did not take up the CLI's token (%d refreshes)", round, n)
		}

		clk.Advance(61 * time.Minute)
		got, err = m.Token(ctx, "imp", p, false)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, _, n := g.stats(); n != 2*round+2 || got.Access != c.file()["access_token"] || !c.works() {
			t.Fatalf("round %d: subpool's refresh did not reach the CLI (%d refreshes)", round, n)
		}
		if fi, _ := os.Stat(c.path); fi.Mode().Perm() != 0o600 || c.file()["scope"] == nil || c.file()["refresh_token"] != tok.Refresh {
			t.Fatalf("round %d: file %v %v", round, fi.Mode(), c.file())
		}
	}
	if s := store.get("imp"); s.Refresh != tok.Refresh || s.Project != tok.Project {
		t.Fatalf("stored %+v", s)
	}
	if n := len(rec.of("token_refreshed")); n != 10 {
		t.Fatalf("%d token_refreshed, want 5 take-ups and 5 refreshes", n)
	}
}

// A write-back does not replace the CLI's own newer token of the same
// login; an older one it does.
func TestWriteBackLeavesTheCLIsNewerTokenAlone(t *testing.T) {
	dir := t.TempDir()
	cli := Tokens{Access: "ya29.cli", Refresh: "1//0g-shared", ExpiresAt: epoch.Add(time.Hour)}
	path := writeGeminiFile(t, dir, cli)
	before, _ := os.ReadFile(path)
	src := Source{Kind: SourceGeminiCLI, Path: path}
	mine := Tokens{Access: "ya29.mine", Refresh: "1//0g-shared", ExpiresAt: epoch.Add(50 * time.Minute)}
	if err := src.write(mine, mine.Refresh); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the CLI's newer token was replaced")
	}
	mine.ExpiresAt = epoch.Add(70 * time.Minute)
	if err := src.write(mine, mine.Refresh); err != nil {
		t.Fatal(err)
	}
	if got, _ := src.Read(); got.Access != "ya29.mine" {
		t.Fatal("a newer token of subpool's was not written back")
	}
}
