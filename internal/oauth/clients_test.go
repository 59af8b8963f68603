package oauth

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
)

// These tests hold subpool's logins and refreshes to what the real clients
// do today (Claude Code 2.1.337, Codex CLI 0.171.0); fidelity_test.go checks
// the values against the clients' own packages.

// A claude.ai login goes where Claude Code sends it, with Claude Code's
// parameters, and comes back to a random localhost port as Claude Code's
// does.
func TestClaudeLoginAsClaudeCode(t *testing.T) {
	p := Anthropic("")
	if p.AuthorizeURL != "https://claude.com/cai/oauth/authorize" {
		t.Fatalf("authorize URL %s, want Claude Code's claude.ai login page", p.AuthorizeURL)
	}
	l, err := StartLogin(guard(t), p, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	u, _ := url.Parse(l.URL())
	q := u.Query()
	if u.Scheme+"://"+u.Host+u.Path != AnthropicAuthorizeURL {
		t.Fatalf("login URL %s", l.URL())
	}
	for k, want := range map[string]string{"code": "true", "client_id": AnthropicClientID, "response_type": "code",
		"scope": AnthropicScope, "code_challenge_method": "S256"} {
		if q.Get(k) != want {
			t.Fatalf("%s = %q, want %q in %s", k, q.Get(k), want, l.URL())
		}
	}
	ru, _ := url.Parse(q.Get("redirect_uri"))
	if ru.Hostname() != "localhost" || ru.Path != "/callback" || ru.Port() == "" || ru.Port() == "0" || !l.Listening() {
		t.Fatalf("redirect_uri %s (listening %v), want http://localhost:PORT/callback on a free port", ru, l.Listening())
	}
}

// The ChatGPT login asks what Codex asks, names subpool as its originator,
// and listens on Codex's registered port 1455.
func TestChatGPTLoginAsCodex(t *testing.T) {
	p := OpenAI("", "")
	l, err := StartLogin(guard(t), p, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	q := mustQuery(t, l.URL())
	for k, want := range map[string]string{
		"scope":                      "openid profile email offline_access api.connectors.read api.connectors.invoke",
		"id_token_add_organizations": "true", "codex_cli_simplified_flow": "true",
		"originator": "subpool", "client_id": OpenAIClientID, "response_type": "code", "code_challenge_method": "S256",
	} {
		if q.Get(k) != want {
			t.Fatalf("%s = %q, want %q in %s", k, q.Get(k), want, l.URL())
		}
	}
	if q.Get("redirect_uri") != "http://localhost:1455/auth/callback" || !l.Listening() {
		t.Fatalf("redirect_uri %s (listening %v); is something else on port 1455?", q.Get("redirect_uri"), l.Listening())
	}
}

// With port 1455 taken (a `codex login` running), the login listens on
// Codex's registered fallback 1457, says so in the URL, and finishes there.
func TestChatGPTLoginFallsBackTo1457(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	busy, err := net.Listen("tcp", "127.0.0.1:1455")
	if err != nil {
		t.Fatalf("this test needs port 1455 free to occupy it: %v", err)
	}
	defer busy.Close()
	p := OpenAI(e.oa.URL()+"/oauth/token", "")
	p.AuthorizeURL = e.oa.URL() + "/oauth/authorize"
	ctx := guard(t)
	l, err := StartLogin(ctx, p, LoginOptions{Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	q := mustQuery(t, l.URL())
	if q.Get("redirect_uri") != "http://localhost:1457/auth/callback" || l.RedirectURI() != q.Get("redirect_uri") || !l.Listening() {
		t.Fatalf("redirect_uri %s, RedirectURI %s, listening %v; want the fallback 1457", q.Get("redirect_uri"), l.RedirectURI(), l.Listening())
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Wait(ctx)
		done <- err
	}()
	resp, err := http.Get(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("browser saw %d %s", resp.StatusCode, page)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func mustQuery(t *testing.T, s string) url.Values {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// Each refresh has the shape its real client sends: Claude Code posts JSON
// with its scope; Codex posts JSON {client_id, grant_type, refresh_token}
// with no scope.
func TestRefreshShapeAsTheClients(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	ctx := guard(t)
	for _, c := range []struct {
		p      Provider
		fields []string
		scope  string
	}{
		{e.anth, []string{"client_id", "grant_type", "refresh_token", "scope"}, AnthropicScope},
		{e.oai, []string{"client_id", "grant_type", "refresh_token"}, ""},
	} {
		t.Run(c.p.Name, func(t *testing.T) {
			e.login("c-"+c.p.Name, c.p.Name)
			if _, err := e.m.Token(ctx, "c-"+c.p.Name, c.p, true); err != nil {
				t.Fatal(err)
			}
			r, ok := e.oa.LastRefresh()
			if !ok || r.ContentType != "application/json" || !slices.Equal(r.Fields, c.fields) || r.Scope != c.scope {
				t.Fatalf("refresh sent %+v, want JSON with %v and scope %q", r, c.fields, c.scope)
			}
		})
	}
}

// Codex's rule for a refresh refused: any 401 from the token endpoint, or
// one of the refresh_token_* codes wherever the body puts it, means the
// login is dead. subpool asks for a new login at once and does not spend
// the endpoint's time again.
func TestDeadChatGPTLoginAsksForALogin(t *testing.T) {
	for i, c := range []struct {
		status int
		body   string
	}{
		{401, `{}`},
		{401, ``},
		{401, `{"error":{"message":"Unauthorized","type":"invalid_request_error","code":"token_expired"}}`},
		{401, `{"error":"unauthorized"}`},
		{400, `{"code":"refresh_token_expired"}`},
		{400, `{"error":{"code":"REFRESH_TOKEN_REUSED"}}`},
		{403, `{"error":"refresh_token_invalidated"}`},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			e.login("c", sim.OpenAI)
			e.oa.ScriptRefresh(sim.Step{Status: c.status, Body: c.body})
			ctx := guard(t)
			_, err := e.m.Token(ctx, "c", e.oai, true)
			if !isRelogin(err) || !strings.Contains(err.Error(), "subpool login openai") {
				t.Fatalf("%d %s: %v, want a relogin", c.status, c.body, err)
			}
			_, err = e.m.Token(ctx, "c", e.oai, true)
			if !isRelogin(err) {
				t.Fatalf("second call: %v", err)
			}
			if st := e.oa.Stats(); st.Refreshes != 1 {
				t.Fatalf("the endpoint was asked %d times, want 1", st.Refreshes)
			}
		})
	}
}

// A 401 from Anthropic's endpoint with no invalid_grant stays temporary,
// as Claude Code treats it (it logs out only on invalid_grant).
func TestAnthropic401WithoutInvalidGrantIsTemporary(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	e.login("c", sim.Anthropic)
	e.oa.ScriptRefresh(sim.Step{Status: 401, Body: `{"error":{"type":"authentication_error","message":"try later"}}`})
	if _, err := e.m.Token(guard(t), "c", e.anth, true); err == nil || isRelogin(err) {
		t.Fatalf("%v, want a temporary failure", err)
	}
}
