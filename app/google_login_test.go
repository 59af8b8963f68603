package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// googleHome is oauthHome with the google provider on the sim: its Gemini
// API, Code Assist and token endpoint.
func googleHome(t *testing.T, oa *sim.OAuthServer) string {
	t.Helper()
	home := oauthHome(t, oa)
	f, err := os.OpenFile(filepath.Join(home, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[providers.google]\nbase_url = %q\ncode_assist_url = %q\ntoken_url = %q\nauthorize_url = %q\nredirect_uri = \"http://127.0.0.1:0/oauth2callback\"\n",
		oa.URL(), oa.URL(), oa.URL()+"/token", oa.URL()+"/o/oauth2/v2/auth")
	f.Close()
	return home
}

const geminiTurn = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

// geminiVia sends a Gemini API request as Gemini CLI does, its key as
// x-goog-api-key.
func geminiVia(t *testing.T, base, key string) (int, string) {
	t.Helper()
	resp, body := sendVia(t, base, "", "/v1beta/models/gemini-2.5-flash:generateContent", geminiTurn,
		"x-api-key", "", "x-goog-api-key", key, "User-Agent", "GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64; terminal)")
	return resp.StatusCode, body
}

// `subpool login google`, end to end: the browser step is a test client;
// the login's Code Assist project is found as Gemini CLI finds it, stored
// with the tokens, and named by the requests Gemini CLI's traffic sends.
func TestLoginGoogleEndToEnd(t *testing.T) {
	up, oa := startOAuthSim(t, sim.OAuthOptions{Email: "ada@example.com", Google: sim.GoogleLogin{Email: "ada@example.com", Project: "ada-proj-1"}})
	home := googleHome(t, oa)
	code, out, errs := loginWith(t, oa, home, "google", false)
	if code != 0 || !strings.Contains(out, "added google-") || !strings.Contains(out, "(google, ada@example.com") || !strings.Contains(out, "/o/oauth2/v2/auth?") || !strings.Contains(out, "client_id=681255809395-") {
		t.Fatalf("login google: %d %q %q", code, out, errs)
	}
	id := strings.Fields(out[strings.Index(out, "added "):])[1]
	if sec := homeSecret(t, home, id); sec["project"] != "ada-proj-1" || sec["refresh_token"] == "" {
		t.Fatalf("stored secret keys %v, project %q", secretKeys(sec), sec["project"])
	}
	s := startHome(t, home, &logBuf{})
	code, body := geminiVia(t, oauthProxyFor(t, s), s.ClientKey())
	if code != 200 || !strings.Contains(body, "candidates") {
		t.Fatalf("%d %s", code, body)
	}
	// The server polls the idle login's quota (retrieveUserQuota) on its
	// own, so the generate call need not be the last one Code Assist saw.
	var gen *sim.Record
	for _, r := range up.Requests() {
		if r.Path == "/v1internal:generateContent" {
			gen = &r
		}
	}
	if gen == nil {
		t.Fatalf("Code Assist saw no generate call in %d requests", len(up.Requests()))
	}
	if !strings.Contains(string(gen.Body), `"project":"ada-proj-1"`) {
		t.Fatalf("Code Assist was asked %s with %s", gen.Path, gen.Body)
	}
}

// Importing Gemini CLI's login keeps it shared: the CLI refreshes first
// and subpool takes its tokens up without a refresh of its own; subpool
// refreshes and the CLI's file gets the new tokens, in its shape and mode,
// which the upstream takes.
func TestImportGeminiCLIKeptInStep(t *testing.T) {
	up, oa := startOAuthSim(t, sim.OAuthOptions{Email: "gc@example.com", AccessTTL: 20 * time.Minute})
	home := googleHome(t, oa)
	gdir := t.TempDir()
	t.Setenv("GEMINI_CLI_HOME", gdir)
	g := oa.GrantGoogle(sim.GoogleLogin{Email: "gc@example.com", Project: "gc-proj"})
	credPath := filepath.Join(gdir, ".gemini", "oauth_creds.json")
	os.MkdirAll(filepath.Dir(credPath), 0o700)
	write := func(access string, exp time.Time) {
		b, _ := json.MarshalIndent(map[string]any{"access_token": access, "refresh_token": g.Refresh, "scope": "https://www.googleapis.com/auth/cloud-platform",
			"token_type": "Bearer", "id_token": g.IDToken, "expiry_date": exp.UnixMilli()}, "", "  ")
		if err := os.WriteFile(credPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(g.Access, g.ExpiresAt.Add(-10*time.Minute)) // the CLI logged in a while ago; not yet due
	os.WriteFile(filepath.Join(gdir, ".gemini", "google_accounts.json"), []byte(`{"active":"gc@example.com","old":[]}`), 0o600)

	code, out, errs := runImport("gemini-cli", "--home", home)
	if code != 0 || !strings.Contains(out, "(google, gemini-cli gc@example.com") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	id := strings.Fields(out)[1]
	if sec := homeSecret(t, home, id); sec["project"] != "gc-proj" || sec["source"] != "gemini-cli" {
		t.Fatalf("secret keys %v project %q", secretKeys(sec), sec["project"])
	}
	logs := &logBuf{}
	s := startHome(t, home, logs)
	px := oauthProxyFor(t, s)

	// The CLI refreshes first (Google keeps the refresh token) and writes
	// its file; the old access token stops working.
	before := oa.Stats()
	oa.ExpireAccess(g.Access)
	fresh, expiresIn := refreshAtSim(t, oa, g.Refresh)
	write(fresh, time.Now().Add(expiresIn))
	if code, body := geminiVia(t, px, s.ClientKey()); code != 200 {
		t.Fatalf("after the CLI's refresh: %d %s", code, body)
	}
	if last := up.Requests()[len(up.Requests())-1]; last.Credential != fresh {
		t.Fatalf("subpool did not take the CLI's token up")
	}
	if st := oa.Stats(); st.Refreshes != before.Refreshes+1 {
		t.Errorf("refreshes %d → %d: subpool refreshed instead of taking the CLI's token", before.Refreshes, st.Refreshes)
	}

	// Later (a renewal within 30 s of another is not repeated: a restart
	// stands for the hour between), subpool refreshes: the file gets its
	// token, and the CLI's next call with the file's token works.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s.Shutdown(ctx)
	cancel()
	s = startHome(t, home, logs)
	px = oauthProxyFor(t, s)
	oa.ExpireAccess(fresh)
	if code, body := geminiVia(t, px, s.ClientKey()); code != 200 {
		t.Fatalf("after subpool's refresh: %d %s", code, body)
	}
	var onDisk map[string]any
	b, _ := os.ReadFile(credPath)
	if err := json.Unmarshal(b, &onDisk); err != nil {
		t.Fatal(err)
	}
	access, _ := onDisk["access_token"].(string)
	if access == fresh || access == "" || onDisk["refresh_token"] != g.Refresh || onDisk["token_type"] != "Bearer" {
		t.Fatalf("the CLI's file was not given subpool's refresh: %s\nlogs: %s", b, logs.String())
	}
	if fi, _ := os.Stat(credPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	if last := up.Requests()[len(up.Requests())-1]; last.Credential != access {
		t.Errorf("the retry did not use the new token")
	}
	if st := upCodeAssist(t, oa, access, "gc-proj"); st != 200 {
		t.Errorf("the CLI's token from its file is refused upstream: %d", st)
	}
}

// refreshAtSim refreshes as Gemini CLI does (a form with its client), and
// returns the new access token and its lifetime.
func refreshAtSim(t *testing.T, oa *sim.OAuthServer, refresh string) (string, time.Duration) {
	t.Helper()
	resp, err := http.PostForm(oa.URL()+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh},
		"client_id": {sim.GoogleClientID}, "client_secret": {sim.GoogleClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if json.NewDecoder(resp.Body).Decode(&v); resp.StatusCode != 200 || v.AccessToken == "" {
		t.Fatalf("refresh at the sim: %d", resp.StatusCode)
	}
	return v.AccessToken, time.Duration(v.ExpiresIn) * time.Second
}

// upCodeAssist is the CLI's own call to Code Assist with a token.
func upCodeAssist(t *testing.T, oa *sim.OAuthServer, access, project string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, oa.URL()+"/v1internal:generateContent",
		strings.NewReader(`{"model":"gemini-2.5-flash","project":"`+project+`","request":`+geminiTurn+`}`))
	req.Header.Set("Authorization", "Bearer "+access)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
