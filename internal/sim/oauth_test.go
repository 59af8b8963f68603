package sim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// startOAuth runs a sim with its OAuth server in front, on a fake clock.
func startOAuth(t *testing.T, o OAuthOptions) (*OAuthServer, *Server, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(epoch)
	s := New(Options{Clock: clk})
	t.Cleanup(s.Close)
	oa := s.OAuth(o)
	if err := oa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oa.Close)
	return oa, s, clk
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorize plays the browser: it asks for a code and returns the
// redirect it was given.
func authorize(t *testing.T, oa *OAuthServer, clientID, redirect, challenge, state string) *url.URL {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {state}}
	resp, err := noRedirect.Get(oa.URL() + "/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func challengeOf(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// tokenCall posts a grant the way each provider's clients do: JSON to
// Anthropic, a form to OpenAI.
func tokenCall(t *testing.T, oa *OAuthServer, provider string, fields map[string]string) (int, map[string]any) {
	t.Helper()
	var req *http.Request
	if provider == Anthropic {
		b, _ := json.Marshal(fields)
		req, _ = http.NewRequest(http.MethodPost, oa.URL()+"/v1/oauth/token", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
	} else {
		v := url.Values{}
		for k, f := range fields {
			v.Set(k, f)
		}
		req, _ = http.NewRequest(http.MethodPost, oa.URL()+"/oauth/token", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

const verifier = "a-pkce-verifier-that-is-long-enough-0123456789abcdef"

func TestOAuthAuthorizationCodeChecksPKCE(t *testing.T) {
	oa, _, _ := startOAuth(t, OAuthOptions{Email: "ada@example.com"})
	for _, tc := range []struct{ provider, clientID string }{{Anthropic, AnthropicClientID}, {OpenAI, OpenAIClientID}} {
		t.Run(tc.provider, func(t *testing.T) {
			const redirect = "http://localhost:1/callback"
			loc := authorize(t, oa, tc.clientID, redirect, challengeOf(verifier), "st4te")
			if loc.Query().Get("state") != "st4te" || loc.Query().Get("code") == "" || loc.Host != "localhost:1" {
				t.Fatalf("redirect %s", loc)
			}
			code := loc.Query().Get("code")
			grant := map[string]string{"grant_type": "authorization_code", "code": code, "client_id": tc.clientID,
				"redirect_uri": redirect, "code_verifier": "the-wrong-verifier-which-is-also-long-enough-000000"}
			if st, out := tokenCall(t, oa, tc.provider, grant); st != 400 || out["error"] != "invalid_grant" {
				t.Fatalf("wrong verifier accepted: %d %v", st, out)
			}
			// The failed attempt used the code up, as upstream does.
			loc = authorize(t, oa, tc.clientID, redirect, challengeOf(verifier), "st4te")
			grant["code"] = loc.Query().Get("code")
			grant["code_verifier"] = verifier
			st, out := tokenCall(t, oa, tc.provider, grant)
			if st != 200 || out["access_token"] == nil || out["refresh_token"] == nil || out["expires_in"] != float64(3600) {
				t.Fatalf("exchange: %d %v", st, out)
			}
			if tc.provider == Anthropic {
				acct, _ := out["account"].(map[string]any)
				if acct["email_address"] != "ada@example.com" {
					t.Fatalf("no account email: %v", out)
				}
			} else {
				idt, _ := out["id_token"].(string)
				claims := jwtClaims(t, idt)
				auth, _ := claims["https://api.openai.com/auth"].(map[string]any)
				if claims["email"] != "ada@example.com" || auth["chatgpt_account_id"] == "" || auth["chatgpt_plan_type"] != "plus" {
					t.Fatalf("id token claims: %v", claims)
				}
				if len(idt) <= 2000 {
					t.Fatalf("id token is %d bytes; the real one exceeds keychain item limits", len(idt))
				}
			}
			if st, _ := tokenCall(t, oa, tc.provider, grant); st != 400 {
				t.Fatalf("a code was accepted twice: %d", st)
			}
			if got := oa.Stats().Exchanges; got == 0 {
				t.Fatal("exchange not counted")
			}
		})
	}
}

func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOAuthRefreshRotatesAndRefusesReuse(t *testing.T) {
	oa, _, _ := startOAuth(t, OAuthOptions{})
	for _, tc := range []struct {
		provider, clientID string
		status             int
		code               string
	}{
		{Anthropic, AnthropicClientID, 400, "invalid_grant"},
		{OpenAI, OpenAIClientID, 401, "refresh_token_reused"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			before := oa.Stats()
			g := oa.Grant(tc.provider)
			st, out := tokenCall(t, oa, tc.provider, map[string]string{"grant_type": "refresh_token", "refresh_token": g.Refresh, "client_id": tc.clientID})
			if st != 200 || out["refresh_token"] == g.Refresh || out["refresh_token"] == nil || out["access_token"] == g.Access {
				t.Fatalf("refresh did not rotate: %d", st)
			}
			st, out = tokenCall(t, oa, tc.provider, map[string]string{"grant_type": "refresh_token", "refresh_token": g.Refresh, "client_id": tc.clientID})
			if st != tc.status || oauthCode(out) != tc.code {
				t.Fatalf("reuse: %d %v", st, out)
			}
			after := oa.Stats()
			if after.Refreshes-before.Refreshes != 2 || after.Rotations-before.Rotations != 1 || after.Reused-before.Reused != 1 {
				t.Fatalf("stats %+v -> %+v", before, after)
			}
		})
	}
}

// oauthCode reads either provider's error shape.
func oauthCode(out map[string]any) string {
	switch e := out["error"].(type) {
	case string:
		return e
	case map[string]any:
		c, _ := e["code"].(string)
		return c
	}
	return ""
}

func TestOAuthRevokedAndScriptedRefreshes(t *testing.T) {
	oa, _, _ := startOAuth(t, OAuthOptions{})
	g := oa.Grant(OpenAI)
	refreshOf := func(tok string) (int, map[string]any) {
		return tokenCall(t, oa, OpenAI, map[string]string{"grant_type": "refresh_token", "refresh_token": tok, "client_id": OpenAIClientID})
	}
	oa.ScriptRefresh(Step{Status: 429, Header: map[string]string{"Retry-After": "7"}}, Step{Status: 503, Times: 2})
	for _, want := range []int{429, 503, 503} {
		if st, _ := refreshOf(g.Refresh); st != want {
			t.Fatalf("scripted %d, got %d", want, st)
		}
	}
	// Scripted failures never spend the token.
	st, out := refreshOf(g.Refresh)
	if st != 200 {
		t.Fatalf("after the script: %d %v", st, out)
	}
	next, _ := out["refresh_token"].(string)
	oa.Revoke(next)
	if st, out := refreshOf(next); st != 401 || oauthCode(out) != "refresh_token_invalidated" {
		t.Fatalf("revoked: %d %v", st, out)
	}
	if s := oa.Stats(); s.Scripted != 3 || s.Revoked != 1 || s.Rotations != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Access tokens work on the model routes until they expire on the sim's
// clock, and then get the provider's "token expired" 401.
func TestOAuthAccessTokensExpireOnTheClock(t *testing.T) {
	oa, s, clk := startOAuth(t, OAuthOptions{AccessTTL: 10 * time.Minute})
	for _, tc := range []struct {
		provider, path, body, want string
	}{
		{Anthropic, "/v1/messages", `{"model":"claude-sonnet-4-5","messages":[]}`, "OAuth token has expired"},
		{OpenAI, "/backend-api/codex/responses", `{"model":"gpt-5","instructions":"i","input":"hi","stream":true}`, "token_expired"},
	} {
		g := oa.Grant(tc.provider)
		send := func() (int, string) {
			req, _ := http.NewRequest(http.MethodPost, oa.URL()+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+g.Access)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		if st, body := send(); st != 200 {
			t.Fatalf("%s fresh token: %d %s", tc.provider, st, body)
		}
		clk.Advance(10 * time.Minute)
		if st, body := send(); st != 401 || !strings.Contains(body, tc.want) {
			t.Fatalf("%s expired token: %d %s", tc.provider, st, body)
		}
	}
	g := oa.Grant(Anthropic)
	oa.ExpireAccess(g.Access)
	req, _ := http.NewRequest(http.MethodPost, oa.URL()+"/v1/messages", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+g.Access)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("ExpireAccess: %d", resp.StatusCode)
	}
	if n := len(s.Requests()); n != 5 {
		t.Fatalf("the Server recorded %d model requests, want 5", n)
	}
}
